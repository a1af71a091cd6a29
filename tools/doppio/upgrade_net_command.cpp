// doppio upgrade_net: rewrites a net in Caffe's V0 or V1 layer format as `layer` blocks, as
// Caffe's upgrade_net_proto_text and upgrade_net_proto_binary do.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "command.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/upgrade_net.hpp"

DEFINE_bool(binary, false,
            "Read and write binary NetParameters (.caffemodel weights) instead of prototxt.");

namespace doppio {
namespace {

int UpgradeNet() {
  const std::vector<std::string>& files = CommandArguments();
  DOPPIO_ENSURE(files.size() == 2)
      << "upgrade_net: give the old net and the file to write: doppio upgrade_net [--binary] "
      << "IN OUT (" << files.size() << " arguments given)";
  NetParameter net;
  if (FLAGS_binary) {
    ReadProtoFromBinaryFile(files[0], &net);
  } else {
    ReadProtoFromTextFile(files[0], &net);
  }
  if (!UpgradeNetAsNeeded(files[0], &net)) {
    LOG(INFO) << files[0] << ": already in the current format; written unchanged";
  }
  if (FLAGS_binary) {
    WriteProtoToBinaryFile(net, files[1]);
  } else {
    WriteProtoToTextFile(net, files[1]);
  }
  LOG(INFO) << "Wrote the upgraded net to " << files[1];
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND_WITH_ARGUMENTS(upgrade_net,
                                       "rewrite a V0/V1 Caffe net or weights file (IN OUT)",
                                       doppio::UpgradeNet);
