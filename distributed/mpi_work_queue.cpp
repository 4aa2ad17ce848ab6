// The work queue across MPI ranks. Rank 0 runs a dealer thread that answers every other
// rank's threads: each sends the result of its last item with the request for the next, and
// is answered with an item or -1 (no more). Rank 0's own threads take items from the same
// dealer directly. Requests are polled with a short sleep rather than a blocking receive,
// which in Open MPI spins and would take a core from the search on rank 0.
#include <mpi.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "distributed/local_work.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTagAsk = 1;
constexpr int kTagDealBase = 1000;  // + the asking thread's slot on its rank
constexpr auto kPollInterval = std::chrono::microseconds(200);

// Leads every request: the asking thread's slot, and the item whose result follows (-1: none)
// with the seconds it took.
struct AskHeader {
  int32_t slot = 0;
  int32_t item = -1;
  double seconds = 0;
};

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::any runOne(const WorkItems& work, int item) {
  if (!work.alone) return work.run(item);
  const detail::AloneInThisProcess alone;
  return work.run(item);
}

// Rank 0's side: the next item to deal, until all are dealt or `stop` holds.
class Dealer {
 public:
  Dealer(const WorkItems& work, const std::atomic<bool>& stop) : work_(work), stop_(stop) {}
  int next() {
    std::lock_guard lock(mutex_);
    if (stop_.load() || next_ == work_.items.size()) return -1;
    return work_.items[next_++];
  }

 private:
  const WorkItems& work_;
  const std::atomic<bool>& stop_;
  std::mutex mutex_;
  size_t next_ = 0;
};

// Runs `slot(i)` for i in [0, count) at once on the process's TBB threads.
void onEachSlot(int count, const std::function<void(int)>& slot) {
  tbb::parallel_for(
      0, count, [&](int i) { slot(i); }, tbb::simple_partitioner());
}

// Until every other rank's thread has been told to end, or `abandon` holds (an error on rank
// 0, which then ends the job: the threads still asking are never answered).
void serveOtherRanks(int remoteThreads, Dealer& dealer, const WorkItems& work,
                     std::mutex& collectMutex, const std::atomic<bool>& abandon) {
  std::string buffer;
  while (remoteThreads > 0 && !abandon.load()) {
    int waiting = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &waiting, &status);
    if (!waiting) {
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    buffer.resize(static_cast<size_t>(bytes));
    MPI_Recv(buffer.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTagAsk, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    AskHeader header;
    std::memcpy(&header, buffer.data(), sizeof header);
    if (header.item >= 0) {
      std::lock_guard lock(collectMutex);
      work.collect(header.item, work.decode(buffer.substr(sizeof header)), header.seconds);
    }
    const int32_t item = dealer.next();
    MPI_Send(&item, 1, MPI_INT32_T, status.MPI_SOURCE, kTagDealBase + header.slot, MPI_COMM_WORLD);
    if (item < 0) --remoteThreads;
  }
}

RankShare runOnRoot(const WorkItems& work, const std::atomic<bool>& stop, int remoteThreads) {
  const Clock::time_point start = Clock::now();
  Dealer dealer(work, stop);
  std::mutex mutex;  // guards collect and the share
  RankShare share;
  share.threads = work.threadsPerRank;
  // An error in either the dealer thread or rank 0's own threads ends both, then propagates
  // (main ends the job with MPI_Abort).
  std::atomic<bool> abandon{false};
  std::exception_ptr serverError;
  std::thread server([&] {
    try {
      serveOtherRanks(remoteThreads, dealer, work, mutex, abandon);
    } catch (...) {
      serverError = std::current_exception();
      abandon = true;
    }
  });
  try {
    onEachSlot(work.threadsPerRank, [&](int) {
      for (int item = dealer.next(); item >= 0 && !abandon.load(); item = dealer.next()) {
        const Clock::time_point begun = Clock::now();
        std::any result = runOne(work, item);
        const double seconds = secondsSince(begun);
        std::lock_guard lock(mutex);
        work.collect(item, std::move(result), seconds);
        ++share.items;
        share.busySeconds += seconds;
        share.seconds = secondsSince(start);
      }
    });
  } catch (...) {
    abandon = true;
    server.join();
    throw;
  }
  server.join();
  if (serverError) std::rethrow_exception(serverError);
  return share;
}

RankShare runOnWorker(const WorkItems& work) {
  const Clock::time_point start = Clock::now();
  std::mutex mutex;  // guards the share
  RankShare share;
  share.threads = work.threadsPerRank;
  onEachSlot(work.threadsPerRank, [&](int slot) {
    AskHeader header{static_cast<int32_t>(slot), -1, 0.0};
    std::string message(sizeof header, '\0');
    while (true) {
      std::memcpy(message.data(), &header, sizeof header);
      MPI_Send(message.data(), static_cast<int>(message.size()), MPI_BYTE, 0, kTagAsk,
               MPI_COMM_WORLD);
      int32_t item = -1;
      MPI_Recv(&item, 1, MPI_INT32_T, 0, kTagDealBase + slot, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (item < 0) return;
      const Clock::time_point begun = Clock::now();
      message.resize(sizeof header);
      message += work.encode(runOne(work, item));
      header.item = item;
      header.seconds = secondsSince(begun);
      std::lock_guard lock(mutex);
      ++share.items;
      share.busySeconds += header.seconds;
      share.seconds = secondsSince(start);
    }
  });
  return share;
}

std::string encodeShare(const RankShare& s) {
  std::ostringstream text;
  text.precision(17);
  text << s.threads << " " << s.items << " " << s.busySeconds << " " << s.seconds;
  return text.str();
}

RankShare decodeShare(const std::string& text) {
  RankShare s;
  std::istringstream(text) >> s.threads >> s.items >> s.busySeconds >> s.seconds;
  return s;
}

}  // namespace

std::vector<RankShare> runOnEveryRank(const WorkItems& work, const std::atomic<bool>& stop) {
  if (ranks() == 1) return {detail::runInThisProcess(work, stop)};
  // Rank 0 learns how many threads will ask, so it knows when every one has been told to end.
  int remoteThreads = 0;
  const int mine = rank() == 0 ? 0 : work.threadsPerRank;
  MPI_Reduce(&mine, &remoteThreads, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  const RankShare share = rank() == 0 ? runOnRoot(work, stop, remoteThreads) : runOnWorker(work);
  const std::vector<std::string> all = gather(encodeShare(share));
  if (rank() != 0) return {share};
  std::vector<RankShare> shares;
  for (const std::string& text : all) shares.push_back(decodeShare(text));
  return shares;
}

}  // namespace mugraph::distributed
