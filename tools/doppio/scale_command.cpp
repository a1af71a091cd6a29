// `doppio scale`: predicts a net's data-parallel scaling (time per iteration, exposed
// communication, efficiency) on N ranks over a given link, from per-layer compute times and
// GradientSync's real bucket plan (src/parallel/scaling_model.hpp). With --calibrate, under
// an MPI launcher, it measures the link between the ranks instead.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/net.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/link_calibration.hpp"
#include "doppio/parallel/mpi_communicator.hpp"
#include "doppio/parallel/rank_logging.hpp"
#include "doppio/parallel/scaling_model.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"
#include "engine_override.hpp"
#include "json_value.hpp"
#include "layer_profile.hpp"
#include "shared_flags.hpp"
#include "synthetic_inputs.hpp"

DEFINE_string(ranks, "1,2,4,8,16,32,64", "scale: the rank counts to predict, comma-separated.");
DEFINE_string(link, "",
              "scale: link rates between the ranks, comma-separated, as scripts/cluster.sh "
              "takes them: 1gbit, 10gbit, 100gbit, 250mbit (one table and curve each).");
DEFINE_double(bandwidth_gbps, 0, "scale: the link's rate in Gbit/s, instead of --link.");
DEFINE_double(latency_us, 50, "scale: the time of one message between two ranks (alpha), us.");
DEFINE_double(reduce_gbs, 0,
              "scale: how fast a rank sums a received buffer into its own, GB/s (gamma); 0: "
              "summing costs nothing next to the wire.");
DEFINE_double(comm_cpu_gbs, 0,
              "scale: with --shared_cores, the bytes per second (GB/s) that one core's time "
              "sends between ranks, all copying and summing on both ends included; 0: "
              "communication takes no CPU from the compute.");
DEFINE_string(comm_cpu_curve, "",
              "scale: --comm_cpu_gbs by the collective's size, as --calibrate prints it: "
              "BYTES:GBS pairs, comma-separated, by increasing bytes (between them linear in "
              "log bytes, beyond them the nearest); instead of --comm_cpu_gbs.");
DEFINE_string(bandwidth_curve, "",
              "scale: with --bandwidth_gbps, the rate by the bytes a link carries in a row, as "
              "--calibrate prints it: BYTES:GBPS pairs, comma-separated, by increasing bytes "
              "(a shaped link lets a burst through faster; between them linear in log bytes, "
              "beyond them the nearest). Each collective is charged the rate of what its kind "
              "carries on the busiest link in one iteration.");
DEFINE_double(broadcast_factor, 1,
              "scale: a broadcast's time per byte on the root's link as a share of the link's "
              "(--calibrate measures it: several flows out of one rank can fill more of a link "
              "than one).");
DEFINE_int32(shared_cores, 0,
             "scale: the cores all ranks share (ranks on one machine, as scripts/cluster.sh's "
             "hosts), whose time communication takes from the compute; 0: none shared. "
             "--calibrate: the cores to assume (0: this machine's).");
DEFINE_string(collectives, "mpi",
              "scale: whose collectives the ranks run: mpi (Open MPI, as MpiCommunicator "
              "issues them) or nccl (NcclCommunicator: ring allreduce).");
DEFINE_string(time_json, "",
              "scale: per-layer times measured elsewhere (`doppio time --json=FILE`) instead "
              "of measuring them here.");
DEFINE_double(tflops, 0,
              "scale: estimate per-layer times from the net's arithmetic at this many TFLOPS "
              "instead of measuring them.");
DEFINE_double(compute_ms, 0,
              "scale: scale the per-layer times so that forward + backward + update take this "
              "long (e.g. a measured time per iteration with no communication).");
DEFINE_string(plot, "",
              "scale: draw efficiency and images/s against ranks, one curve per link, into "
              "this PNG (tools/plot_scaling, matplotlib).");
DEFINE_bool(calibrate, false,
            "scale: under mpirun, measure alpha, beta and gamma between the ranks (ping-pong "
            "and allreduce sweeps) and print them as flags for later runs.");
DEFINE_double(calibrate_max_mb, 16, "scale: the largest message of the calibration sweeps, MB.");
DEFINE_int32(calibrate_repeats, 5, "scale: runs per calibration point (the median counts).");

namespace doppio {
namespace {

// The bucket sizes tried when looking for the best, besides --bucket_mb.
const double kCandidateBucketsMb[] = {0.25, 1, 4, 16, 25, 64};

struct NamedLink {
  std::string name;
  LinkCost cost;
  double gbps = 0;
};

// A rate as scripts/cluster.sh takes it ("10gbit", "250mbit") in bits per second.
double RateBits(const std::string& text) {
  std::string rate = text;
  std::transform(rate.begin(), rate.end(), rate.begin(), ::tolower);
  DOPPIO_ENSURE(rate != "unlimited" && rate != "none")
      << "--link=" << text
      << ": an unlimited link has no rate to model; measure it (mpirun doppio scale "
         "--calibrate) and pass --bandwidth_gbps and --latency_us";
  const std::pair<const char*, double> units[] = {
      {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}};
  for (const auto& unit : units) {
    const std::string suffix = unit.first;
    if (rate.size() <= suffix.size() ||
        rate.compare(rate.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string number = rate.substr(0, rate.size() - suffix.size());
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() && *end == '\0' && value > 0) return value * unit.second;
    break;
  }
  DOPPIO_FAIL() << "--link: unknown link rate '" << text
                << "': give a number with gbit, mbit or kbit (1gbit, 10gbit, 100gbit)";
  return 0;
}

// A flag of BYTES:RATE pairs by increasing bytes (--comm_cpu_curve, --bandwidth_curve) as
// (bytes, rate) pairs; empty for an empty flag.
std::vector<std::pair<double, double>> SizeCurveFromFlag(const std::string& flag,
                                                         const std::string& text, const char* unit,
                                                         const char* example) {
  std::vector<std::pair<double, double>> curve;
  for (const std::string& part : SplitCommaList(text)) {
    const std::size_t colon = part.find(':');
    char* bytes_end = nullptr;
    char* rate_end = nullptr;
    const double bytes = std::strtod(part.substr(0, colon).c_str(), &bytes_end);
    const std::string rate_text = colon == std::string::npos ? "" : part.substr(colon + 1);
    const double rate = std::strtod(rate_text.c_str(), &rate_end);
    DOPPIO_ENSURE(colon != std::string::npos && colon > 0 && *bytes_end == '\0' &&
                  !rate_text.empty() && *rate_end == '\0')
        << "--" << flag << ": '" << part << "' is not BYTES:" << unit << " (e.g. " << example
        << ")";
    DOPPIO_ENSURE(bytes > 0 && rate >= 0)
        << "--" << flag << ": '" << part << "': bytes must be positive, " << unit
        << " not negative";
    DOPPIO_ENSURE(curve.empty() || bytes > curve.back().first)
        << "--" << flag << ": sizes must increase, " << bytes << " follows " << curve.back().first;
    curve.emplace_back(bytes, rate);
  }
  return curve;
}

// --comm_cpu_curve as core-seconds per byte by size; empty without the flag.
// --shared_cores, checked here only: the model and --calibrate both take it from here.
int SharedCoresFromFlag() {
  DOPPIO_ENSURE(FLAGS_shared_cores >= 0)
      << "--shared_cores must not be negative, not " << FLAGS_shared_cores;
  return FLAGS_shared_cores;
}

std::vector<CpuCostPoint> CpuCurveFromFlag() {
  std::vector<CpuCostPoint> curve;
  for (const auto& [bytes, gbs] :
       SizeCurveFromFlag("comm_cpu_curve", FLAGS_comm_cpu_curve, "GBS", "262144:0.3")) {
    curve.push_back({bytes, gbs > 0 ? 1.0 / (gbs * 1e9) : 0.0});
  }
  return curve;
}

// --bandwidth_curve as seconds per byte by size; empty without the flag.
std::vector<BetaPoint> BetaCurveFromFlag() {
  std::vector<BetaPoint> curve;
  for (const auto& [bytes, gbps] :
       SizeCurveFromFlag("bandwidth_curve", FLAGS_bandwidth_curve, "GBPS", "1048576:1.7")) {
    DOPPIO_ENSURE(gbps > 0) << "--bandwidth_curve: " << bytes
                            << " bytes at 0 Gbit/s: every rate must be positive";
    curve.push_back({bytes, 8.0 / (gbps * 1e9)});
  }
  return curve;
}

LinkCost CostAt(double bits_per_second) {
  LinkCost cost;
  cost.alpha = FLAGS_latency_us * 1e-6;
  cost.beta = 8.0 / bits_per_second;
  cost.gamma = FLAGS_reduce_gbs > 0 ? 1.0 / (FLAGS_reduce_gbs * 1e9) : 0.0;
  cost.cpu = FLAGS_comm_cpu_gbs > 0 ? 1.0 / (FLAGS_comm_cpu_gbs * 1e9) : 0.0;
  cost.shared_cores = SharedCoresFromFlag();
  cost.cpu_curve = CpuCurveFromFlag();
  cost.beta_curve = BetaCurveFromFlag();
  cost.broadcast_factor = FLAGS_broadcast_factor;
  return cost;
}

std::vector<NamedLink> LinksFromFlags() {
  DOPPIO_ENSURE(FLAGS_latency_us >= 0) << "--latency_us must not be negative";
  DOPPIO_ENSURE(FLAGS_reduce_gbs >= 0) << "--reduce_gbs must not be negative";
  DOPPIO_ENSURE(FLAGS_comm_cpu_gbs >= 0) << "--comm_cpu_gbs must not be negative";
  DOPPIO_ENSURE(FLAGS_comm_cpu_gbs == 0 || FLAGS_comm_cpu_curve.empty())
      << "give --comm_cpu_gbs or --comm_cpu_curve, not both";
  DOPPIO_ENSURE(FLAGS_link.empty() || FLAGS_bandwidth_gbps == 0)
      << "give --link or --bandwidth_gbps, not both";
  DOPPIO_ENSURE(FLAGS_bandwidth_curve.empty() || FLAGS_bandwidth_gbps > 0)
      << "--bandwidth_curve refines a measured link: give it with --bandwidth_gbps (as "
         "--calibrate prints them), not with --link";
  DOPPIO_ENSURE(FLAGS_broadcast_factor > 0)
      << "--broadcast_factor must be positive, not " << FLAGS_broadcast_factor;
  std::vector<NamedLink> links;
  if (FLAGS_bandwidth_gbps != 0) {
    DOPPIO_ENSURE(FLAGS_bandwidth_gbps > 0) << "--bandwidth_gbps must be positive";
    std::ostringstream name;
    name << FLAGS_bandwidth_gbps << " Gbit/s";
    links.push_back({name.str(), CostAt(FLAGS_bandwidth_gbps * 1e9), FLAGS_bandwidth_gbps});
    return links;
  }
  for (const std::string& rate : SplitCommaList(FLAGS_link)) {
    const double bits = RateBits(rate);
    links.push_back({rate, CostAt(bits), bits / 1e9});
  }
  DOPPIO_ENSURE(!links.empty())
      << "doppio scale needs --link=RATE (1gbit, 10gbit, 100gbit: comma-separated for several) "
         "or --bandwidth_gbps=G";
  return links;
}

std::vector<int> RanksFromFlag() {
  std::vector<int> ranks;
  for (const std::string& part : SplitCommaList(FLAGS_ranks)) {
    char* end = nullptr;
    const long value = std::strtol(part.c_str(), &end, 10);
    DOPPIO_ENSURE(end != part.c_str() && *end == '\0')
        << "--ranks: '" << part << "' is not a whole number";
    DOPPIO_ENSURE(value >= 1 && value <= (1 << 20))
        << "--ranks: " << value << " ranks; every rank count must be at least 1";
    ranks.push_back(static_cast<int>(value));
  }
  DOPPIO_ENSURE(!ranks.empty()) << "--ranks is empty: give rank counts, e.g. --ranks=1,2,4,8";
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// The per-layer times: from --time_json, from --tflops, or measured here as `doppio time`
// measures them. Checked against the net's layers.
LayerProfile ComputeProfile(Net<float>* net, const std::shared_ptr<GpuContext>& gpu) {
  DOPPIO_ENSURE(FLAGS_time_json.empty() || FLAGS_tflops == 0)
      << "give --time_json or --tflops, not both";
  LayerProfile profile;
  if (!FLAGS_time_json.empty()) {
    std::ifstream in(FLAGS_time_json);
    DOPPIO_ENSURE(in.good()) << "--time_json: cannot read " << FLAGS_time_json;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    profile = LayerProfileFromJson(text, FLAGS_time_json);
    DOPPIO_ENSURE(profile.layers.size() == net->layers().size())
        << FLAGS_time_json << " times " << profile.layers.size() << " layers; the net has "
        << net->layers().size() << " (was it measured on another model or phase?)";
    for (std::size_t i = 0; i < profile.layers.size(); ++i) {
      const std::string label = net->layer_label(static_cast<int>(i));
      DOPPIO_ENSURE(profile.layers[i].name == label)
          << FLAGS_time_json << ": layer " << i << " is '" << profile.layers[i].name
          << "', the net's is '" << label << "'";
    }
    const LayerProfile shape_only = EstimateLayerProfile(*net, 1);
    DOPPIO_ENSURE(profile.batch == shape_only.batch)
        << FLAGS_time_json << " was measured at batch " << profile.batch << ", the net has "
        << shape_only.batch << " (--batch)";
    profile.device = "from " + FLAGS_time_json + " (" + profile.device + ")";
  } else if (FLAGS_tflops != 0) {
    profile = EstimateLayerProfile(*net, FLAGS_tflops);
  } else {
    DOPPIO_ENSURE(FLAGS_iterations > 0) << "--iterations must be positive";
    const auto finish = [&gpu] {
#ifdef DOPPIO_WITH_CUDA
      if (gpu) gpu->Synchronize();
#endif
    };
    profile = MeasureLayerProfile(net, FLAGS_iterations, finish);
    profile.device =
        "measured here: " +
        (gpu ? gpu->Describe() : "CPU, " + std::to_string(ParallelParts()) + " threads") + ", " +
        std::to_string(FLAGS_iterations) + " iterations";
  }
  if (FLAGS_compute_ms != 0) {
    DOPPIO_ENSURE(FLAGS_compute_ms > 0) << "--compute_ms must be positive";
    double total = profile.update_ms;
    for (const auto& layer : profile.layers) total += layer.forward_ms + layer.backward_ms;
    DOPPIO_ENSURE(total > 0) << "--compute_ms: the per-layer times are all zero";
    const double factor = FLAGS_compute_ms / total;
    for (auto& layer : profile.layers) {
      layer.forward_ms *= factor;
      layer.backward_ms *= factor;
    }
    profile.update_ms *= factor;
    std::ostringstream text;
    text << profile.device << "; scaled by " << factor << " to --compute_ms=" << FLAGS_compute_ms;
    profile.device = text.str();
  }
  return profile;
}

IterationProfile WithTimes(IterationProfile plan, const LayerProfile& profile) {
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    plan.forward[i] = profile.layers[i].forward_ms / 1e3;
    plan.backward[i] = profile.layers[i].backward_ms / 1e3;
  }
  plan.update = profile.update_ms / 1e3;
  return plan;
}

struct Row {
  std::string link;
  double gbps = 0;
  int ranks = 0;
  SyncMode sync = SyncMode::kOverlap;
  double bucket_mb = 0;
  IterationPrediction prediction;
  double images_per_second = 0;
  double efficiency = 0;
};

std::string Megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MB", bytes / (1 << 20));
  return text;
}

std::string RowJson(const Row& row, const LinkCost& link) {
  std::ostringstream out;
  out.precision(9);
  out << "{\"link\": " << JsonQuote(row.link) << ", \"bandwidth_gbps\": " << row.gbps
      << ", \"latency_us\": " << link.alpha * 1e6 << ", \"ranks\": " << row.ranks
      << ", \"sync\": " << JsonQuote(SyncModeName(row.sync)) << ", \"bucket_mb\": " << row.bucket_mb
      << ", \"ms_per_iter\": " << row.prediction.iteration * 1e3
      << ", \"compute_ms\": " << row.prediction.compute * 1e3
      << ", \"exposed_ms\": " << row.prediction.exposed * 1e3
      << ", \"comm_ms\": " << row.prediction.comm * 1e3
      << ", \"comm_cpu_ms\": " << row.prediction.comm_cpu * 1e3
      << ", \"images_per_s\": " << row.images_per_second << ", \"efficiency\": " << row.efficiency
      << "}";
  return out.str();
}

// tools/plot_scaling, beside this executable (the build copies it there) or in the source
// tree the executable was built from.
std::string PlotScript() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::vector<std::filesystem::path> candidates = {
      self.parent_path() / "plot_scaling",
      self.parent_path().parent_path() / "tools" / "plot_scaling"};
  for (const auto& path : candidates) {
    if (!error && std::filesystem::exists(path)) return path.string();
  }
  DOPPIO_FAIL() << "--plot: tools/plot_scaling is not beside " << self.string()
                << " (it is copied there by the build)";
  return "";
}

// One sweep of the calibration as a table: size, measured and modelled time.
void PrintSweep(const std::string& title, const std::vector<CalibrationPoint>& points) {
  std::printf("%s:\n%14s %14s %14s\n", title.c_str(), "bytes", "measured us", "model us");
  for (const auto& point : points) {
    std::printf("%14.0f %14.1f %14.1f\n", point.bytes, point.seconds * 1e6, point.predicted * 1e6);
  }
}

// One sweep as a JSON list of [bytes, seconds], 9 significant digits.
std::string SweepJson(const std::vector<CalibrationPoint>& points) {
  std::ostringstream out;
  out.precision(9);
  out << "[";
  for (std::size_t i = 0; i < points.size(); ++i) {
    out << (i ? ", " : "") << "[" << points[i].bytes << ", " << points[i].seconds << "]";
  }
  out << "]";
  return out.str();
}

int Calibrate() {
  DOPPIO_ENSURE(MpiCommunicator::LaunchedByMpi())
      << "--calibrate measures the links between MPI ranks: run it as mpirun -np 2 doppio "
         "scale --calibrate (or on the hosts you want to measure)";
  MpiCommunicator comm;
  SetUpRankLogging(comm.rank(), comm.size());
  const int given = SharedCoresFromFlag();
  const int cores =
      given > 0 ? given : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const LinkCalibration result =
      CalibrateLink(&comm, FLAGS_calibrate_max_mb * (1 << 20), FLAGS_calibrate_repeats, cores);
  if (comm.rank() != 0) {
    comm.Barrier("calibration: done");
    return 0;
  }
  const LinkCost& link = result.link;
  LOG(INFO) << "Calibrated " << comm.description();
  const std::string ranks = std::to_string(result.ranks);
  PrintSweep("ping-pong between ranks 0 and 1 (one way)", result.ping_pong);
  PrintSweep("allreduce over " + ranks + " ranks (in place, as Open MPI runs GradientSync's)",
             result.allreduce);
  PrintSweep("broadcast from rank 0 over " + ranks + " ranks (as GradientSync's weights)",
             result.broadcast);
  const double gbps = link.beta > 0 ? 8.0 / link.beta / 1e9 : 0;
  std::ostringstream beta_flag, beta_json;
  for (std::size_t i = 0; i < link.beta_curve.size(); ++i) {
    const BetaPoint& point = link.beta_curve[i];
    // A message no slower than alpha has no rate to speak of: the largest rate printable.
    const double rate = point.beta > 0 ? 8.0 / point.beta / 1e9 : 1e6;
    beta_flag << (i ? "," : "") << static_cast<long long>(point.bytes) << ":" << rate;
    beta_json << (i ? ", " : "") << "[" << static_cast<long long>(point.bytes) << ", " << rate
              << "]";
  }
  const double reduce_gbs = link.gamma > 0 ? 1.0 / link.gamma / 1e9 : 0;
  std::printf(
      "alpha %.1f us, beta %.4f ns/byte (%.3f Gbit/s), gamma %.4f ns/byte (%.3f GB/s "
      "summed), broadcast %.3f x beta\n",
      link.alpha * 1e6, link.beta * 1e9, gbps, link.gamma * 1e9, reduce_gbs, link.broadcast_factor);
  std::printf(
      "an allreduce under a spin on every rank (%d shared cores):\n%14s %14s %14s %14s %14s\n",
      cores, "bytes", "spin ms", "stretch ms", "bytes sent", "GB/s a core");
  std::ostringstream curve_flag, curve_json;
  for (std::size_t i = 0; i < result.spins.size(); ++i) {
    const SpinPoint& spin = result.spins[i];
    const double gbs = link.cpu_curve[i].cpu > 0 ? 1.0 / link.cpu_curve[i].cpu / 1e9 : 0;
    std::printf("%14.0f %14.2f %14.2f %14.0f %14.3f\n", spin.bytes, spin.spin_seconds * 1e3,
                spin.stretch_seconds * 1e3, spin.bytes_sent, gbs);
    curve_flag << (i ? "," : "") << static_cast<long long>(spin.bytes) << ":" << gbs;
    curve_json << (i ? ", " : "") << "[" << static_cast<long long>(spin.bytes) << ", " << gbs
               << "]";
  }
  const double cpu_gbs = link.cpu > 0 ? 1.0 / link.cpu / 1e9 : 0;
  std::printf(
      "for later runs: doppio scale --latency_us=%.1f --bandwidth_gbps=%.4g "
      "--bandwidth_curve=%s --broadcast_factor=%.4g --reduce_gbs=%.4g --comm_cpu_gbs=%.4g "
      "--shared_cores=%d\n"
      "  or, the CPU cost by size: --comm_cpu_curve=%s instead of --comm_cpu_gbs\n",
      link.alpha * 1e6, gbps, beta_flag.str().c_str(), link.broadcast_factor, reduce_gbs, cpu_gbs,
      cores, curve_flag.str().c_str());
  if (!FLAGS_json.empty()) {
    std::ostringstream out;
    out.precision(9);
    out << "{\"ranks\": " << result.ranks << ", \"latency_us\": " << link.alpha * 1e6
        << ", \"bandwidth_gbps\": " << gbps << ", \"reduce_gbs\": " << reduce_gbs
        << ", \"comm_cpu_gbs\": " << cpu_gbs << ", \"shared_cores\": " << cores
        << ", \"spin_ms\": " << result.spins.back().spin_seconds * 1e3
        << ", \"stretch_ms\": " << result.spins.back().stretch_seconds * 1e3
        << ", \"broadcast_factor\": " << link.broadcast_factor << ", \"bandwidth_curve\": ["
        << beta_json.str() << "], \"comm_cpu_curve\": [" << curve_json.str()
        << "], \"ping_pong\": " << SweepJson(result.ping_pong)
        << ", \"allreduce\": " << SweepJson(result.allreduce)
        << ", \"broadcast\": " << SweepJson(result.broadcast) << "}\n";
    WriteFileAtomically(out.str(), FLAGS_json);
  }
  comm.Barrier("calibration: done");
  return 0;
}

int ScaleCommand() {
  if (FLAGS_calibrate) return Calibrate();
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "doppio scale needs --model=FILE";
  const std::vector<int> ranks = RanksFromFlag();
  const std::vector<NamedLink> links = LinksFromFlags();
  const SyncMode sync = ParseSyncMode(FLAGS_sync);
  const CollectiveLibrary library = ParseCollectiveLibrary(FLAGS_collectives);
  DOPPIO_ENSURE(FLAGS_bucket_mb > 0) << "--bucket_mb must be positive, not " << FLAGS_bucket_mb;

  NetParameter param = ReadNetParamsFromTextFile(FLAGS_model);
  param.mutable_state()->set_phase(TRAIN);
  param.mutable_state()->set_level(FLAGS_level);
  for (const auto& stage : StagesFromFlag()) param.mutable_state()->add_stage(stage);
  param = WithSyntheticInputs(param, FLAGS_batch, ImageShapeFromFlag());
  if (!FLAGS_engine.empty()) param = WithEngine(param, FLAGS_engine);
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();
  Net<float> net(param, 1701, gpu, CpuOptionsFromFlags());
  const LayerProfile profile = ComputeProfile(&net, gpu);
  DOPPIO_ENSURE(profile.batch > 0) << "the net's first layer makes no batch of inputs";

  const IterationProfile plan = WithTimes(PlanIteration(net, FLAGS_bucket_mb), profile);
  const IterationPrediction alone = PredictIteration(plan, sync, 1, library, links[0].cost);
  double gradient_bytes = 0;
  for (const auto& bucket : plan.buckets) gradient_bytes += bucket.gradient_bytes;
  std::printf(
      "doppio scale: %s, batch %d per rank (weak scaling: the global batch grows with "
      "the ranks)\n",
      FLAGS_model.c_str(), profile.batch);
  std::printf("compute per iteration: %.2f ms (forward %.2f, backward %.2f, update %.2f); %s\n",
              alone.compute * 1e3,
              std::accumulate(plan.forward.begin(), plan.forward.end(), 0.0) * 1e3,
              std::accumulate(plan.backward.begin(), plan.backward.end(), 0.0) * 1e3,
              plan.update * 1e3, profile.device.c_str());
  std::printf("gradients: %s in %zu buckets (--bucket_mb=%g), --sync=%s, --collectives=%s\n",
              Megabytes(gradient_bytes).c_str(), plan.buckets.size(), FLAGS_bucket_mb,
              SyncModeName(sync), CollectiveLibraryName(library));
  if (FLAGS_shared_cores > 0 && !FLAGS_comm_cpu_curve.empty()) {
    std::printf(
        "the ranks share %d cores: every byte sent costs them one core's time at the rate "
        "--comm_cpu_curve gives for its collective's size, which backward cannot hide while "
        "all of them compute\n",
        FLAGS_shared_cores);
  }
  if (FLAGS_shared_cores > 0 && FLAGS_comm_cpu_gbs > 0) {
    std::printf(
        "the ranks share %d cores: every byte sent costs them 1 / %g GB/s of one core's "
        "time, which backward cannot hide while all of them compute\n",
        FLAGS_shared_cores, FLAGS_comm_cpu_gbs);
  }

  std::vector<Row> rows;
  std::vector<std::string> json_rows;
  // Every sync mode and bucket size tried at the largest rank count.
  std::vector<std::string> json_plans;
  std::printf("\n%-12s %6s %10s %11s %11s %10s %12s %10s\n", "link", "ranks", "ms/iter",
              "compute ms", "exposed ms", "comm ms", "img/s", "efficiency");
  for (const NamedLink& link : links) {
    for (int n : ranks) {
      Row row;
      row.link = link.name;
      row.gbps = link.gbps;
      row.ranks = n;
      row.sync = sync;
      row.bucket_mb = FLAGS_bucket_mb;
      row.prediction = PredictIteration(plan, sync, n, library, link.cost);
      row.images_per_second = n * profile.batch / row.prediction.iteration;
      row.efficiency = alone.iteration / row.prediction.iteration;
      std::printf("%-12s %6d %10.2f %11.2f %11.2f %10.2f %12.1f %9.1f%%\n", row.link.c_str(), n,
                  row.prediction.iteration * 1e3, row.prediction.compute * 1e3,
                  row.prediction.exposed * 1e3, row.prediction.comm * 1e3, row.images_per_second,
                  100 * row.efficiency);
      rows.push_back(row);
      json_rows.push_back(RowJson(row, link.cost));
    }
  }
  std::printf("\n");
  for (const NamedLink& link : links) {
    int largest = 0;
    for (const Row& row : rows) {
      if (row.link == link.name && row.efficiency >= 0.9) largest = std::max(largest, row.ranks);
    }
    if (largest > 0) {
      std::printf("%s: the largest rank count at >= 90%% efficiency is %d (of %s)\n",
                  link.name.c_str(), largest, FLAGS_ranks.c_str());
    } else {
      std::printf("%s: no rank count reaches 90%% efficiency\n", link.name.c_str());
    }
    // The best plan at the largest rank count: every sync mode and bucket size.
    const int most = ranks.back();
    std::vector<double> buckets(std::begin(kCandidateBucketsMb), std::end(kCandidateBucketsMb));
    buckets.push_back(FLAGS_bucket_mb);
    std::sort(buckets.begin(), buckets.end());
    buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
    double best = 0;
    SyncMode best_sync = sync;
    double best_bucket = FLAGS_bucket_mb;
    for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kReduceBroadcast, SyncMode::kBlocking}) {
      for (double mb : buckets) {
        // Blocking sends one allreduce: the bucket size does not matter.
        if (mode == SyncMode::kBlocking && mb != FLAGS_bucket_mb) continue;
        const IterationProfile candidate = WithTimes(PlanIteration(net, mb), profile);
        Row row;
        row.link = link.name;
        row.gbps = link.gbps;
        row.ranks = most;
        row.sync = mode;
        row.bucket_mb = mb;
        row.prediction = PredictIteration(candidate, mode, most, library, link.cost);
        row.images_per_second = most * profile.batch / row.prediction.iteration;
        row.efficiency = alone.iteration / row.prediction.iteration;
        json_plans.push_back(RowJson(row, link.cost));
        const double time = row.prediction.iteration;
        if (best == 0 || time < best * (1 - 1e-9)) {
          best = time;
          best_sync = mode;
          best_bucket = mb;
        }
      }
    }
    const double given = PredictIteration(plan, sync, most, library, link.cost).iteration;
    std::printf(
        "%s, %d ranks: best --sync=%s --bucket_mb=%g (%.2f ms/iter; --sync=%s "
        "--bucket_mb=%g: %.2f)\n",
        link.name.c_str(), most, SyncModeName(best_sync), best_bucket, best * 1e3,
        SyncModeName(sync), FLAGS_bucket_mb, given * 1e3);
  }

  if (!FLAGS_json.empty() || !FLAGS_plot.empty()) {
    std::ostringstream out;
    out << "{\"model\": " << JsonQuote(FLAGS_model) << ", \"batch\": " << profile.batch
        << ", \"compute\": " << JsonQuote(profile.device)
        << ", \"collectives\": " << JsonQuote(CollectiveLibraryName(library)) << ", \"rows\": [\n";
    for (std::size_t i = 0; i < json_rows.size(); ++i) {
      out << "  " << json_rows[i] << (i + 1 < json_rows.size() ? "," : "") << "\n";
    }
    out << "], \"plans\": [\n";
    for (std::size_t i = 0; i < json_plans.size(); ++i) {
      out << "  " << json_plans[i] << (i + 1 < json_plans.size() ? "," : "") << "\n";
    }
    out << "]}\n";
    const std::string json_path = FLAGS_json.empty() ? FLAGS_plot + ".json" : FLAGS_json;
    WriteFileAtomically(out.str(), json_path);
    if (!FLAGS_plot.empty()) {
      DOPPIO_ENSURE(FLAGS_plot.find('\'') == std::string::npos &&
                    json_path.find('\'') == std::string::npos)
          << "--plot: a file name with a quote (') in it is not supported: " << FLAGS_plot;
      const std::string command =
          "python3 '" + PlotScript() + "' '" + json_path + "' -o '" + FLAGS_plot + "'";
      const int status = std::system(command.c_str());
      if (FLAGS_json.empty()) std::filesystem::remove(json_path);
      DOPPIO_ENSURE(status == 0) << "--plot: `" << command << "` failed (status " << status << ")";
      LOG(INFO) << "Wrote " << FLAGS_plot;
    }
  }
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(scale,
                        "predict data-parallel scaling on N ranks over a link (--calibrate: "
                        "measure the link under mpirun)",
                        doppio::ScaleCommand);
