#pragma once

#include <string>

#include <google/protobuf/message.h>

#include "doppio/proto/doppio.pb.h"
#include "doppio/util/error.hpp"

namespace doppio {

// Reads a text-format message. Throws Error "PATH:LINE:COLUMN: problem" on a syntax error
// or an unknown field, and "PATH: cannot open" when the file is missing.
void ReadProtoFromTextFile(const std::string& path, google::protobuf::Message* message);
// Parses text held in memory; `origin` names it in error messages.
void ReadProtoFromTextString(const std::string& text, const std::string& origin,
                             google::protobuf::Message* message);
// Reads a binary message (size limit lifted for large .caffemodel files). Throws Error
// naming the file when it cannot be opened or is not a valid message of that type.
void ReadProtoFromBinaryFile(const std::string& path, google::protobuf::Message* message);

// Writes atomically: to PATH.tmp-XXXX in the same folder, flush, fsync, rename over PATH.
// On any failure the previous PATH is untouched and Error names the file and the cause.
void WriteProtoToBinaryFile(const google::protobuf::Message& message, const std::string& path);
void WriteProtoToTextFile(const google::protobuf::Message& message, const std::string& path);
void WriteFileAtomically(const std::string& contents, const std::string& path);

// A NetParameter from a prototxt, upgraded from Caffe's V0 or V1 format where it is in one
// (util/upgrade_net.hpp) and checked: no field that Doppio parses but does not support (the error
// names the layer and the field). A file with no layer at all (an empty file, a solver given as a
// model) is an error naming it; layers that the net's state later filters out all count, as in
// Caffe.
NetParameter ReadNetParamsFromTextFile(const std::string& path);
NetParameter ReadNetParamsFromTextString(const std::string& text, const std::string& origin);
// A SolverParameter from a prototxt; one that names no net (none of net, net_param, train_net,
// train_net_param) is an error naming the file. Its inline nets are upgraded as above.
SolverParameter ReadSolverParamsFromTextFile(const std::string& path);

// Throws Error naming the layer and field for any field that is set but not supported.
void CheckSupportedFields(const NetParameter& param, const std::string& origin);

}  // namespace doppio
