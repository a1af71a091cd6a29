#include "slurm_job.hpp"

#include <cstdlib>
#include <regex>

namespace doppio {
namespace {

std::string Variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

int Number(const char* name) { return std::atoi(Variable(name).c_str()); }

}  // namespace

std::optional<SlurmJob> SlurmJobFromEnvironment() {
  SlurmJob job;
  job.id = Variable("SLURM_JOB_ID");
  if (job.id.empty()) return std::nullopt;
  const std::string array_job = Variable("SLURM_ARRAY_JOB_ID");
  const std::string array_task = Variable("SLURM_ARRAY_TASK_ID");
  if (!array_job.empty() && !array_task.empty()) job.id = array_job + "_" + array_task;
  job.restart_count = Number("SLURM_RESTART_COUNT");
  job.name = Variable("SLURM_JOB_NAME");
  job.node_list = Variable("SLURM_JOB_NODELIST");
  job.num_nodes = Number("SLURM_JOB_NUM_NODES");
  return job;
}

std::string Describe(const SlurmJob& job) {
  std::string text = "Slurm job " + job.id;
  if (!job.name.empty()) text += " '" + job.name + "'";
  text += job.restart_count > 0 ? " (restart " + std::to_string(job.restart_count) + ")"
                                : " (first run)";
  if (job.num_nodes > 0) {
    text += ", " + std::to_string(job.num_nodes) + " node" + (job.num_nodes > 1 ? "s" : "");
    if (!job.node_list.empty()) text += ": " + job.node_list;
  }
  return text;
}

std::string JobSnapshotPrefix(const std::string& snapshot_prefix, const SlurmJob& job) {
  return snapshot_prefix + "_job" + job.id;
}

int SlurmTasksOnNode(const std::string& tasks_per_node, int node_id) {
  static const std::regex group(R"((\d+)(\(x(\d+)\))?(,|$))");
  int first_node = 0;
  std::size_t at = 0;
  for (std::sregex_iterator it(tasks_per_node.begin(), tasks_per_node.end(), group), end; it != end;
       ++it) {
    if (static_cast<std::size_t>(it->position()) != at) return 0;
    at += it->length();
    const int tasks = std::stoi((*it)[1]);
    const int nodes = (*it)[3].matched ? std::stoi((*it)[3]) : 1;
    if (node_id >= first_node && node_id < first_node + nodes) return tasks;
    first_node += nodes;
  }
  return 0;
}

}  // namespace doppio
