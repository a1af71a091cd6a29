// A record value of an LMDB data set, read the way training reads it: the bytes become the
// first record of an LMDB, beside a well-formed 3x4x4 record, and a Data layer (batch of
// both, crop 2 with mirroring) sets up from the first record's shape and loads a batch
// through its prefetch thread, transforming each record against that shape.
//
// One LMDB environment serves every input: the input overwrites the first record, and each
// input's layer reads it through the open environment. Creating an LMDB for every input ran
// 430 inputs a second; reusing one runs about 2,300 (docs/fuzzing.md). The layer is built
// anew, so that its set-up reads the fuzzed record: reusing one layer as well (SeekStream
// between inputs) ran no faster, and set-up coverage was lost.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "doppio/core/net.hpp"
#include "doppio/data/db.hpp"
#include "doppio/util/io.hpp"
#include "fuzz_util.hpp"

namespace {

std::string WellFormedRecord() {
  doppio::Datum datum;
  datum.set_channels(3);
  datum.set_height(4);
  datum.set_width(4);
  datum.set_data(std::string(3 * 4 * 4, '\x7f'));
  datum.set_label(1);
  return datum.SerializeAsString();
}

doppio::NetParameter DataNet(const std::string& source) {
  doppio::NetParameter param;
  doppio::ReadProtoFromTextString(R"(
      name: "fuzz"
      state { phase: TRAIN }
      layer { name: "data" type: "Data" top: "data" top: "label"
              data_param { batch_size: 2 prefetch: 1 }
              transform_param { crop_size: 2 mirror: true } })",
                                  "fuzz data net", &param);
  param.mutable_layer(0)->mutable_data_param()->set_source(source);
  return param;
}

// The LMDB stays open for writing while each input's layer reads it (the two share its
// environment); the layer is gone before the next input is written.
struct Harness {
  std::string source = (doppio::fuzz::ScratchDir() / "lmdb").string();
  std::unique_ptr<doppio::db::DB> db = [this] {
    auto db = doppio::db::OpenLMDB(source, doppio::db::Mode::kNew, std::size_t(1) << 22);
    auto transaction = db->NewTransaction();
    transaction->Put("00000000", WellFormedRecord());
    transaction->Put("00000001", WellFormedRecord());
    transaction->Commit();
    return db;
  }();
  doppio::NetParameter param = DataNet(source);
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness harness;
  {
    auto transaction = harness.db->NewTransaction();
    transaction->Put("00000000", std::string_view(reinterpret_cast<const char*>(data), size));
    transaction->Commit();
  }
  doppio::fuzz::ExpectingErrors([&] {
    doppio::Net<float> net(harness.param);
    net.Forward();
  });
  return 0;
}
