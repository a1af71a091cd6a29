// Must not compile: layers/ sits below solvers/ and cannot see it (tests/layering/).
#include "doppio/solvers/solver.hpp"
