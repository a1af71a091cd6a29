// Must not compile: util/ is the lowest part and cannot see core/ (tests/layering/).
#include "doppio/core/blob.hpp"
