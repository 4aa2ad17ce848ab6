#include "search/progress.h"

#include <unistd.h>

#include <cstdio>

namespace mugraph::search {

ProgressLine::ProgressLine(bool wanted) : enabled_(wanted && isatty(STDERR_FILENO) == 1) {}

void ProgressLine::update(const std::string& text) {
  if (!enabled_) return;
  std::string line = "\r" + text;
  if (text.size() < lastWidth_) line.append(lastWidth_ - text.size(), ' ');
  lastWidth_ = text.size();
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (!enabled_ || lastWidth_ == 0) return;
  std::fputs("\n", stderr);
  lastWidth_ = 0;
}

}  // namespace mugraph::search
