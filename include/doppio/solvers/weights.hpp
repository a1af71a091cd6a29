#pragma once

#include <string>

#include "doppio/core/common.hpp"
#include "doppio/core/net.hpp"

namespace doppio {

// Loads trained weights into `net` from one or more .caffemodel files ("a.caffemodel,b"; a
// name ending in .h5 is read as Caffe's HDF5 weights, util/snapshot_files.hpp),
// copying layers by name (Caffe's fine-tuning rule). Throws Error naming the file when it
// cannot be read, is not a NetParameter with layers, shares no layer name with the net, or
// holds a blob whose shape differs from the net's.
template <typename Dtype>
void LoadNetWeights(Net<Dtype>* net, const std::string& files);

// Checks that `weights` was written for a net of exactly this structure: every layer with
// parameters is present in both with the same number and shapes of blobs (layers that share
// a name are paired in order, as Net::RestoreTrainedLayersFrom pairs them). Throws Error
// naming `origin` and the first mismatch.
template <typename Dtype>
void CheckWeightsMatchNet(const Net<Dtype>& net, const NetParameter& weights,
                          const std::string& origin);

}  // namespace doppio
