#pragma once

#include <optional>
#include <string>

namespace doppio {

// The Slurm job this process runs in, from the variables Slurm sets for a job's tasks
// (docs/slurm.md): what `doppio train` logs and names its snapshots after.
struct SlurmJob {
  // SLURM_JOB_ID, or <SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID> for a task of a job array:
  // the same across requeues, unique among the cluster's jobs.
  std::string id;
  // SLURM_RESTART_COUNT: how often Slurm has requeued the job (0 on its first run).
  int restart_count = 0;
  std::string name;       // SLURM_JOB_NAME
  std::string node_list;  // SLURM_JOB_NODELIST
  int num_nodes = 0;      // SLURM_JOB_NUM_NODES
};

// nullopt outside a Slurm job (no SLURM_JOB_ID).
std::optional<SlurmJob> SlurmJobFromEnvironment();

// One line for the log: "Slurm job 42 'lenet' (restart 2), 2 nodes: h[0-1]".
std::string Describe(const SlurmJob& job);

// <prefix>_job<id>: a job's snapshots apart from other jobs' under the same solver
// (--snapshot_prefix_from_job), and found again by the same job after a requeue.
std::string JobSnapshotPrefix(const std::string& snapshot_prefix, const SlurmJob& job);

// How many of this node's ranks there are, from SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on
// each of the first three nodes, 1 on the fourth) and this node's index SLURM_NODEID; 0 when
// the text does not say.
int SlurmTasksOnNode(const std::string& tasks_per_node, int node_id);

}  // namespace doppio
