#pragma once

#include <string>

#include "doppio/proto/doppio.pb.h"

// Weights and solver states in either of Caffe's formats, chosen by the file name as Caffe
// chooses: a name ending in ".h5" is HDF5, any other a binary protobuf. Writes are atomic
// (WriteFileAtomically); every failure throws Error naming the file.
//
// Caffe's HDF5 layouts:
//   weights      /data/<layer name>/<blob index>, and /diff/<layer name>/<blob index> when
//                the diffs are written. A layer name with '/' makes nested groups.
//   solver state iter, learned_net, current_step, history/<i>; and Doppio's own fields,
//                which Caffe does not read: doppio/history_in_caffe_order,
//                doppio/data_position/<i>/{layer,position}.
namespace doppio {

// Reads weights (a .caffemodel is upgraded from Caffe's V0/V1 format where it is in one). An
// HDF5 file gives one layer per group with blobs; every blob of such a layer must be there
// (Caffe leaves out blobs a layer shares with an earlier one: such a file is refused).
void ReadWeightsFile(const std::string& path, NetParameter* weights);
// Writes weights. HDF5 holds one layer per name: two layers of one name with blobs are an
// Error naming them.
void WriteWeightsFile(const NetParameter& weights, const std::string& path);

void ReadSolverStateFile(const std::string& path, SolverState* state);
void WriteSolverStateFile(const SolverState& state, const std::string& path);

}  // namespace doppio
