#pragma once

// For the tests that run as an MPI job (tests/parallel/*_mpitest.cpp): the job's
// communicator, and a temporary directory every rank shares.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "doppio/parallel/mpi_communicator.hpp"

namespace doppio {
namespace mpi_test {

// The communicator over every rank of the job (made by the test main, which finalises MPI).
std::shared_ptr<MpiCommunicator> World();

// A directory made by rank 0 and known to every rank; removed (by rank 0) when the object
// dies, after a barrier.
class SharedTempDir {
 public:
  SharedTempDir();
  ~SharedTempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace mpi_test
}  // namespace doppio
