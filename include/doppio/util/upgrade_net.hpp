#pragma once

#include <string>

#include "doppio/proto/doppio.pb.h"

namespace doppio {

// Whether `net` is written in one of Caffe's old layer formats: V1 (`layers { type:
// CONVOLUTION ... }`) or V0 (`layers { layer { type: "conv" ... } }`). Net-level inputs
// are not counted: Net builds their Input layer itself.
bool NetNeedsUpgrade(const NetParameter& net);

// Rewrites a V0 or V1 net in place as `layer` blocks, as Caffe's upgrade_net_proto_* tools
// do: V0 "padding" layers folded into the convolution or pooling they feed, V0's flat
// fields moved into each type's parameter message, blobs_lr / weight_decay / param names
// into ParamSpecs, the type enum into the type string; weights are kept. Logs one line naming
// `origin` when it upgrades and returns whether it did. A net that mixes `layer` and `layers`,
// an unknown V0 type, or a V0 field the type does not use is an Error naming `origin`, the
// layer and the field. Net-level inputs, in any format, become a first layer
// (UpgradeNetInputs).
bool UpgradeNetAsNeeded(const std::string& origin, NetParameter* net);

// Rewrites Caffe's deprecated net-level inputs (`input` with `input_shape`, or `input_dim`
// four values an input) as one first layer `input` of type Input, as Caffe's upgrade writes
// them; input names without shapes (old .caffemodel files) are dropped. Returns whether the
// net had inputs. Inputs whose shape count does not match are an Error naming `origin`.
bool UpgradeNetInputs(const std::string& origin, NetParameter* net);

// Moves the deprecated transformation fields (scale, mean_file, crop_size, mirror) of a data
// layer's window_data_param, image_data_param or data_param (the first it has, in that order)
// into its transform_param, as Caffe's UpgradeNetDataTransformation does for V1 nets; the V1
// upgrade calls it for Data, ImageData and WindowData layers. Unlike Caffe, where the old field
// silently wins, a field set in both places to different values is an Error naming `who` and
// the field.
void MoveDeprecatedTransformFields(const std::string& who, LayerParameter* layer);

}  // namespace doppio
