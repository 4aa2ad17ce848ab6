// The search's progress line on stderr: states visited, pruned by reason, candidates,
// verified, elapsed. Redrawn in place (carriage return) when stderr is a terminal; silent
// otherwise, so logs and tests see no control characters.
#pragma once

#include <string>

namespace mugraph::search {

class ProgressLine {
 public:
  explicit ProgressLine(bool wanted);  // shown only if wanted and stderr is a TTY
  void update(const std::string& text);
  void finish();  // ends the line

 private:
  bool enabled_;
  size_t lastWidth_ = 0;
};

}  // namespace mugraph::search
