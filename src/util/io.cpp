#include "doppio/util/io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "doppio/util/fault_points.hpp"
#include "doppio/util/upgrade_net.hpp"

namespace doppio {

namespace {

// Keeps the first parse error with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      std::ostringstream out;
      out << line + 1 << ":" << column + 1 << ": " << message;
      error_ = out.str();
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& error() const { return error_; }

 private:
  bool has_error_ = false;
  std::string error_;
};

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DOPPIO_ENSURE(in.good()) << path << ": cannot open (" << std::strerror(errno) << ")";
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Fields of layers Doppio runs that Caffe's schema has but Doppio does not implement.
// Setting one is an error naming it, never silently ignored. "message.field" -> why.
// (Layer types Doppio refuses are refused by the layer registry, with their reason.)
const std::map<std::string, std::string>& UnsupportedFields() {
  static const std::map<std::string, std::string> fields = {
      {"doppio.ConvolutionParameter.force_nd_im2col",
       "N-d im2col is not supported; convolutions are 2-d"},
  };
  return fields;
}

void CheckMessage(const google::protobuf::Message& message, const std::string& where,
                  const std::string& path) {
  const auto* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    const std::string field_path = path.empty() ? field->name() : path + "." + field->name();
    auto it = UnsupportedFields().find(field->full_name());
    if (it != UnsupportedFields().end()) {
      // A bool switched off is the same as unset.
      const bool is_false_bool =
          field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL &&
          !field->is_repeated() && !reflection->GetBool(message, field);
      DOPPIO_ENSURE(is_false_bool)
          << where << ": field '" << field_path << "' is not supported (" << it->second << ")";
    }
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        CheckMessage(reflection->GetRepeatedMessage(message, field, i), where, field_path);
      }
    } else {
      CheckMessage(reflection->GetMessage(message, field), where, field_path);
    }
  }
}

}  // namespace

void ReadProtoFromTextString(const std::string& text, const std::string& origin,
                             google::protobuf::Message* message) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  DOPPIO_ENSURE(parser.ParseFromString(text, message))
      << origin << ":" << errors.error() << " (while parsing a " << message->GetDescriptor()->name()
      << ")";
}

void ReadProtoFromTextFile(const std::string& path, google::protobuf::Message* message) {
  ReadProtoFromTextString(ReadWholeFile(path), path, message);
}

void ReadProtoFromBinaryFile(const std::string& path, google::protobuf::Message* message) {
  const std::string contents = ReadWholeFile(path);
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(contents.data()),
                                               static_cast<int>(contents.size()));
  input.SetTotalBytesLimit(INT_MAX);
  DOPPIO_ENSURE(message->ParseFromCodedStream(&input) && input.ConsumedEntireMessage())
      << path << ": not a valid binary " << message->GetDescriptor()->name();
}

namespace {

// The process's file-creation mask, read without changing it (umask() can only be read by
// setting it, which would race with threads creating files).
mode_t CreationMask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  }
  return 022;
}

}  // namespace

void WriteFileAtomically(const std::string& contents, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp = (folder / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = mkstemp(temp.data());
  DOPPIO_ENSURE(fd >= 0) << path << ": cannot create a temporary file in " << folder.string()
                         << " (" << std::strerror(errno) << ")";
  // mkstemp makes the file private (0600); the file it becomes is created as any other
  // would be, so that snapshots on a shared file system stay readable by the group.
  ::fchmod(fd, 0666 & ~CreationMask());
  const FaultPoints* faults = InstalledFaultPoints();
  const bool inject = faults != nullptr && faults->FailWrite(path);
  const std::size_t limit = inject ? contents.size() / 2 : contents.size();
  std::size_t written = 0;
  bool ok = true;
  std::string cause;
  while (written < limit) {
    const ssize_t n = ::write(fd, contents.data() + written, limit - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      cause = std::strerror(errno);
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  if (ok && inject) {
    ok = false;
    cause = std::strerror(ENOSPC);
  }
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    cause = std::strerror(errno);
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    cause = std::strerror(errno);
  }
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    cause = std::strerror(errno);
  }
  if (!ok) {
    std::remove(temp.c_str());
    DOPPIO_FAIL() << path << ": write failed (" << cause << "); the previous file is unchanged";
  }
  // Make the rename itself durable.
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void WriteProtoToBinaryFile(const google::protobuf::Message& message, const std::string& path) {
  std::string bytes;
  DOPPIO_ENSURE(message.SerializeToString(&bytes))
      << path << ": cannot serialise " << message.GetDescriptor()->name();
  WriteFileAtomically(bytes, path);
}

void WriteProtoToTextFile(const google::protobuf::Message& message, const std::string& path) {
  std::string text;
  DOPPIO_ENSURE(google::protobuf::TextFormat::PrintToString(message, &text))
      << path << ": cannot print " << message.GetDescriptor()->name();
  WriteFileAtomically(text, path);
}

void CheckSupportedFields(const NetParameter& param, const std::string& origin) {
  DOPPIO_ENSURE(!NetNeedsUpgrade(param))
      << origin << ": holds Caffe's old 'layers' blocks, which must be upgraded to 'layer' "
      << "blocks first (UpgradeNetAsNeeded; `doppio upgrade_net` for a file)";
  for (const auto& layer : param.layer()) {
    CheckMessage(layer, origin + ", layer '" + layer.name() + "'", "");
  }
}

NetParameter ReadNetParamsFromTextString(const std::string& text, const std::string& origin) {
  NetParameter param;
  ReadProtoFromTextString(text, origin, &param);
  UpgradeNetAsNeeded(origin, &param);
  CheckSupportedFields(param, origin);
  return param;
}

NetParameter ReadNetParamsFromTextFile(const std::string& path) {
  NetParameter param = ReadNetParamsFromTextString(ReadWholeFile(path), path);
  // Caffe builds a net of no layers from an empty file and "trains" or times it without a
  // word; a net whose every layer is filtered out for one phase is still allowed (in Net).
  DOPPIO_ENSURE(param.layer_size() > 0)
      << path << ": defines no layers (an empty file, or not a net prototxt?)";
  return param;
}

SolverParameter ReadSolverParamsFromTextFile(const std::string& path) {
  SolverParameter param;
  ReadProtoFromTextFile(path, &param);
  DOPPIO_ENSURE(param.has_net() || param.has_net_param() || param.has_train_net() ||
                param.has_train_net_param())
      << path << ": no training net; set one of net, net_param, train_net or train_net_param "
      << "(an empty file, or not a solver prototxt?)";
  const auto upgrade_and_check = [&path](NetParameter* net, const std::string& field) {
    UpgradeNetAsNeeded(path + " (" + field + ")", net);
    DOPPIO_ENSURE(net->layer_size() > 0) << path << ": its " << field << " defines no layers";
  };
  if (param.has_net_param()) upgrade_and_check(param.mutable_net_param(), "net_param");
  if (param.has_train_net_param()) {
    upgrade_and_check(param.mutable_train_net_param(), "train_net_param");
  }
  for (int i = 0; i < param.test_net_param_size(); ++i) {
    upgrade_and_check(param.mutable_test_net_param(i), "test_net_param #" + std::to_string(i));
  }
  return param;
}

}  // namespace doppio
