// doppio extract_features: runs a trained net over --iterations batches and writes the named
// blobs into databases of Datum records, one record per image, as Caffe's extract_features.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/net.hpp"
#include "doppio/data/db.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"

DEFINE_string(blobs, "", "Comma-separated names of the blobs to extract (e.g. fc7,prob).");
DEFINE_string(outputs, "",
              "Comma-separated databases to create, one for each of --blobs, in that order.");
DEFINE_string(backend, "lmdb", "The output database backend (lmdb; leveldb is not supported).");

namespace doppio {
namespace {

// Records go to the database in transactions of this many, as Caffe's tool commits them.
constexpr int kRecordsPerCommit = 1000;

// Caffe's keys: the image's index, zero-padded to ten digits, so key order is image order.
std::string ImageKey(long index) {
  char key[32];
  std::snprintf(key, sizeof(key), "%010ld", index);
  return key;
}

struct FeatureOutput {
  std::string blob;
  std::unique_ptr<db::DB> db;
  std::unique_ptr<db::Transaction> transaction;
  long images = 0;
};

// Appends one Datum per image of `blob` (float_data, the image's C x H x W).
void WriteImages(const Blob<float>& blob, FeatureOutput* output) {
  DOPPIO_ENSURE(blob.num_axes() >= 1 && blob.num_axes() <= 4)
      << "extract_features: blob '" << output->blob << "' has shape " << blob.shape_string()
      << "; Datum records hold 1 to 4 axes (N x C x H x W)";
  const int num = blob.shape(0);
  const int dim = num > 0 ? blob.count() / num : 0;
  const float* data = blob.cpu_data();
  Datum datum;
  datum.set_channels(blob.channels());
  datum.set_height(blob.height());
  datum.set_width(blob.width());
  for (int n = 0; n < num; ++n) {
    datum.clear_float_data();
    for (int d = 0; d < dim; ++d) datum.add_float_data(data[static_cast<long>(n) * dim + d]);
    output->transaction->Put(ImageKey(output->images), datum.SerializeAsString());
    if (++output->images % kRecordsPerCommit == 0) {
      output->transaction->Commit();
      output->transaction = output->db->NewTransaction();
    }
  }
}

int ExtractFeatures() {
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "extract_features: --model is required (the net prototxt)";
  DOPPIO_ENSURE(!FLAGS_weights.empty())
      << "extract_features: --weights is required (the trained .caffemodel)";
  DOPPIO_ENSURE(FLAGS_iterations > 0)
      << "extract_features: --iterations (batches to run) must be > 0, not " << FLAGS_iterations;
  const std::vector<std::string> blobs = SplitCommaList(FLAGS_blobs);
  const std::vector<std::string> outputs = SplitCommaList(FLAGS_outputs);
  DOPPIO_ENSURE(!blobs.empty()) << "extract_features: --blobs is required (the blobs to extract)";
  DOPPIO_ENSURE(blobs.size() == outputs.size())
      << "extract_features: --blobs names " << blobs.size() << " blob(s) but --outputs "
      << outputs.size() << " database(s); give one database for each blob";
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();

  NetParameter net_param = ReadNetParamsFromTextFile(FLAGS_model);
  NetState* state = net_param.mutable_state();
  state->set_phase(PhaseFromFlag(TEST));
  state->set_level(FLAGS_level);
  state->clear_stage();
  for (const std::string& stage : StagesFromFlag()) state->add_stage(stage);
  Net<float> net(net_param, 1701, gpu, CpuOptionsFromFlags());
  LoadNetWeights(&net, FLAGS_weights);
  // No activation sharing: a later layer could overwrite a blob before it is read here.

  std::vector<FeatureOutput> features(blobs.size());
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    DOPPIO_ENSURE(net.has_blob(blobs[i])) << "extract_features: net '" << net.name()
                                          << "' has no blob '" << blobs[i] << "' (--blobs)";
    features[i].blob = blobs[i];
    features[i].db = db::OpenDB(FLAGS_backend, outputs[i], db::Mode::kNew, "extract_features");
    features[i].transaction = features[i].db->NewTransaction();
  }
  LOG(INFO) << "Extracting features of " << FLAGS_iterations << " batches";
  for (int batch = 0; batch < FLAGS_iterations; ++batch) {
    net.Forward();
    for (FeatureOutput& output : features) WriteImages(*net.blob_by_name(output.blob), &output);
  }
  for (FeatureOutput& output : features) {
    output.transaction->Commit();
    LOG(INFO) << "Extracted features of " << output.images << " query images for feature blob "
              << output.blob;
  }
  LOG(INFO) << "Successfully extracted the features!";
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(extract_features, "write named blobs of N batches into databases of Datums",
                        doppio::ExtractFeatures);
