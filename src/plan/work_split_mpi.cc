// The MPI split of the planner's work (plan/work_split.h): one shared counter on rank 0 that
// every rank takes chunks from with an atomic fetch-and-add (MPI one-sided communication), then
// every rank's results gathered to all, ordered by index. Built when CMake finds MPI
// (STAGECRAFT_HAVE_MPI); otherwise running under mpirun is an error that says so.
#include <cstdlib>

#include "plan/work_split.h"

#ifdef STAGECRAFT_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#endif

namespace stagecraft {
namespace {

// The world size mpirun announces to each process it starts (Open MPI, then MPICH's PMI).
int64_t WorldFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* value = std::getenv(name)) return std::atoll(value);
  }
  return 0;
}

#ifdef STAGECRAFT_HAVE_MPI

class Mpi : public WorkSplit {
 public:
  Mpi() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  std::vector<std::string> Map(size_t count, const std::function<std::string(size_t)>& work,
                               const std::function<void(size_t)>& done) override {
    // The counter lives in rank 0's window.
    int64_t* counter = nullptr;
    MPI_Win window;
    MPI_Win_allocate(rank_ == 0 ? sizeof(int64_t) : 0, sizeof(int64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &counter, &window);
    if (rank_ == 0) *counter = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const int64_t chunk =
        std::max<int64_t>(1, static_cast<int64_t>(count) / (static_cast<int64_t>(size_) * 8));
    ByteWriter mine;
    for (;;) {
      int64_t first = 0;
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window);
      MPI_Fetch_and_op(&chunk, &first, MPI_INT64_T, 0, 0, MPI_SUM, window);
      MPI_Win_unlock(0, window);
      if (first >= static_cast<int64_t>(count)) break;
      const int64_t last = std::min<int64_t>(static_cast<int64_t>(count), first + chunk);
      if (done && rank_ == 0) done(static_cast<size_t>(last));
      for (int64_t index = first; index < last; ++index) {
        mine.Put<uint64_t>(static_cast<uint64_t>(index));
        mine.PutString(work(static_cast<size_t>(index)));
      }
    }
    MPI_Win_free(&window);
    // Every rank's (index, result) pairs to every rank.
    const std::string bytes = mine.Take();
    int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<size_t>(size_));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> offsets(static_cast<size_t>(size_), 0);
    for (size_t r = 1; r < offsets.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
    MPI_Allgatherv(bytes.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                   MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> results(count);
    ByteReader reader(all);
    for (size_t read = 0; read < count; ++read) {
      const uint64_t index = reader.Get<uint64_t>();
      std::string result = reader.GetString();
      if (!reader.ok()) break;  // the missing results then fail to read back (MapValues)
      if (index < count) results[index] = std::move(result);
    }
    return results;
  }

  bool prints() const override { return rank_ == 0; }

  std::string Describe() const override { return std::to_string(size_) + " MPI processes"; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

void FinalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

#endif

}  // namespace

Result<std::unique_ptr<WorkSplit>> MpiSplitFromEnvironment() {
  if (WorldFromEnvironment() <= 1) return std::unique_ptr<WorkSplit>();
#ifdef STAGECRAFT_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    MPI_Init(nullptr, nullptr);
    std::atexit(FinalizeMpi);
  }
  return std::unique_ptr<WorkSplit>(std::make_unique<Mpi>());
#else
  return Error{
      "plan: started by mpirun, but this stagecraft was built without MPI (install "
      "Debian's libopenmpi-dev and rebuild), so each process would plan alone; run one "
      "process, with --jobs N for threads"};
#endif
}

}  // namespace stagecraft
