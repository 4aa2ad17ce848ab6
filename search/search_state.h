// The state of one running search shared by its threads (what a checkpoint saves), and the
// helper threads that watch it: the progress line with periodic checkpoints, and the time
// limit. Internal to search/superoptimize.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "search/checkpoint.h"
#include "search/progress.h"
#include "search/superoptimize.h"

namespace mugraph::search::detail {

using Clock = std::chrono::steady_clock;

// The shared, mutex-guarded state of a running search; also what a checkpoint saves.
class SearchState {
 public:
  explicit SearchState(CheckpointState initial) : saved_(std::move(initial)) {}

  // A completed subtree counts; one a stop interrupted gives its candidates only (a resumed
  // search explores it again, and the candidates merge by hash).
  void merge(int ordinal, SubtreeOutcome&& outcome, size_t poolLimit) {
    std::lock_guard lock(mutex_);
    if (outcome.completed) {
      saved_.completed.insert(ordinal);
      saved_.stats.states += outcome.stats.states;
      for (int r = 0; r < kPruneReasons; ++r) saved_.stats.pruned[r] += outcome.stats.pruned[r];
    }
    saved_.hashes.insert(outcome.hashes.begin(), outcome.hashes.end());
    for (Candidate& c : outcome.best) keepInPool(saved_.pool, std::move(c), poolLimit);
  }
  void recordVerification(uint64_t hash, const VerificationRecord& record) {
    std::lock_guard lock(mutex_);
    saved_.verified[hash] = record;
  }
  CheckpointState snapshot() const {
    std::lock_guard lock(mutex_);
    return saved_;
  }
  std::string progressText(double seconds, size_t verified) const {
    std::lock_guard lock(mutex_);
    std::ostringstream text;
    uint64_t pruned = 0;
    for (uint64_t n : saved_.stats.pruned) pruned += n;
    text << "search: subtrees " << saved_.completed.size() << "/" << saved_.subtrees << "  states "
         << saved_.stats.states << "  pruned " << pruned << " (";
    bool first = true;
    for (int r = 0; r < kPruneReasons; ++r) {
      if (saved_.stats.pruned[r] == 0) continue;
      text << (first ? "" : ", ") << pruneReasonName(static_cast<PruneReason>(r)) << " "
           << saved_.stats.pruned[r];
      first = false;
    }
    text << ")  candidates " << saved_.hashes.size() << "  verified " << verified << "  "
         << static_cast<int>(seconds) << "s";
    return text.str();
  }

 private:
  mutable std::mutex mutex_;
  CheckpointState saved_;
};

// Redraws the progress line and writes checkpoints on a timer until stopped.
class Reporter {
 public:
  Reporter(const SearchState& state, const SearchOptions& options, Clock::time_point start,
           const std::atomic<size_t>& verified)
      : state_(state),
        options_(options),
        start_(start),
        verified_(verified),
        line_(options.progress),
        thread_([this] { run(); }) {}
  ~Reporter() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    line_.update(state_.progressText(elapsed(), verified_.load()));
    line_.finish();
  }
  void checkpointNow() {
    if (!options_.checkpointPath.empty())
      saveCheckpoint(options_.checkpointPath, state_.snapshot());
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void run() {
    auto lastCheckpoint = Clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
      line_.update(state_.progressText(elapsed(), verified_.load()));
      if (std::chrono::duration<double>(Clock::now() - lastCheckpoint).count() >=
          options_.checkpointIntervalSeconds) {
        checkpointNow();
        lastCheckpoint = Clock::now();
      }
    }
  }

  const SearchState& state_;
  const SearchOptions& options_;
  Clock::time_point start_;
  const std::atomic<size_t>& verified_;
  ProgressLine line_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// Calls `onPassed` once `passed()` holds (checked every 100 ms), unless cancelled first.
class Deadline {
 public:
  Deadline(std::function<bool()> passed, std::function<void()> onPassed)
      : passed_(std::move(passed)), onPassed_(std::move(onPassed)), thread_([this] { run(); }) {}
  ~Deadline() { cancel(); }
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
      if (passed_()) {
        onPassed_();
        return;
      }
    }
  }

  std::function<bool()> passed_;
  std::function<void()> onPassed_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace mugraph::search::detail
