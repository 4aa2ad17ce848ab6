// A build without MPI: every process is a single rank.
#include "distributed/local_work.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {

Session::Session(int&, char**&) {}
Session::~Session() = default;
int rank() {
  return 0;
}
int ranks() {
  return 1;
}
bool builtWithMpi() {
  return false;
}
void abortAll(int) {}
std::string broadcast(const std::string& text) {
  return text;
}
std::vector<std::string> gather(const std::string& text) {
  return {text};
}

std::vector<RankShare> runOnEveryRank(const WorkItems& work, const std::atomic<bool>& stop) {
  return {detail::runInThisProcess(work, stop)};
}

}  // namespace mugraph::distributed
