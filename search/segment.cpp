#include "search/segment.h"

#include <algorithm>

namespace mugraph::search {
namespace {

// A variable can be split if it is never buried inside a composite dim and never needed whole.
bool splittable(const Dataflow& flow, const std::set<int>& tensors, int var) {
  if (flow.vars[var].whole) return false;
  for (int t : tensors) {
    if (flow.buriedIn(t, var)) return false;
  }
  return true;
}

}  // namespace

bool reduces(const FlowOp& op, int var) {
  return std::find(op.reducedVars.begin(), op.reducedVars.end(), var) != op.reducedVars.end();
}

std::set<int> segmentTensors(const Dataflow& flow, const Segment& segment) {
  std::set<int> tensors(segment.inputs.begin(), segment.inputs.end());
  for (int i = segment.first; i <= segment.last; ++i) tensors.insert(flow.ops[i].output);
  return tensors;
}

Segment analyzeSegment(const Dataflow& flow, int first, int last) {
  Segment segment;
  segment.first = first;
  segment.last = last;
  std::set<int> produced;
  bool heavy = false;
  for (int i = first; i <= last; ++i) {
    const FlowOp& op = flow.ops[i];
    segment.fusable = segment.fusable && op.fusable;
    heavy = heavy || op.kind == graph::OpKind::Matmul || !op.reducedVars.empty();
    for (int t : op.inputs) {
      if (!produced.count(t) &&
          std::find(segment.inputs.begin(), segment.inputs.end(), t) == segment.inputs.end()) {
        segment.inputs.push_back(t);
      }
    }
    produced.insert(op.output);
  }
  for (int i = first; i <= last; ++i) {
    const int t = flow.ops[i].output;
    bool readLater = flow.isProgramOutput(t);
    for (size_t j = last + 1; j < flow.ops.size() && !readLater; ++j) {
      const std::vector<int>& in = flow.ops[j].inputs;
      readLater = std::find(in.begin(), in.end(), t) != in.end();
    }
    if (readLater) segment.outputs.push_back(t);
  }
  segment.worthABlockGraph = heavy || last > first;
  return segment;
}

std::vector<int> parallelVars(const Dataflow& flow, const Segment& segment) {
  const std::set<int> tensors = segmentTensors(flow, segment);
  std::vector<int> vars;
  for (int v = 0; v < static_cast<int>(flow.vars.size()); ++v) {
    bool everywhere = !segment.outputs.empty();
    for (int t : segment.outputs) everywhere = everywhere && flow.dimOf(t, v) >= 0;
    for (int i = segment.first; i <= segment.last; ++i)
      everywhere = everywhere && !reduces(flow.ops[i], v);
    if (everywhere && splittable(flow, tensors, v)) vars.push_back(v);
  }
  return vars;
}

std::vector<int> reducedVars(const Dataflow& flow, const Segment& segment) {
  const std::set<int> tensors = segmentTensors(flow, segment);
  std::set<int> vars;
  for (int i = segment.first; i <= segment.last; ++i) {
    for (int v : flow.ops[i].reducedVars) {
      if (splittable(flow, tensors, v)) vars.insert(v);
    }
  }
  return {vars.begin(), vars.end()};
}

bool gridSplittableReduction(const Dataflow& flow, const Segment& segment, int var) {
  std::set<int> partial, partialMax, shifted;
  for (int i = segment.first; i <= segment.last; ++i) {
    const FlowOp& op = flow.ops[i];
    if (op.rescaledCombine) return false;
    // Under a causal mask a part of the keys can be all -inf for a row: its partial max is -inf
    // and its shift -inf - (-inf) is NaN over the reals (one pass keeps such a tile's running
    // max finite; a split does not).
    if (op.kind == graph::OpKind::CausalMask) return false;
    bool readsShift = false;
    for (int t : op.inputs) {
      if (partialMax.count(t) || shifted.count(t)) {
        readsShift = true;
      } else if (partial.count(t)) {
        return false;
      }
    }
    if (reduces(op, var)) {
      (op.kind == graph::OpKind::ReduceMax && !readsShift ? partialMax : partial).insert(op.output);
    } else if (readsShift) {
      if (!op.reducedVars.empty()) return false;  // reduced over another variable
      shifted.insert(op.output);
    }
  }
  for (int t : segment.outputs) {
    if (!partial.count(t) && !partialMax.count(t)) return false;
  }
  return true;
}

int rescaledCombineVar(const Dataflow& flow, const Segment& segment) {
  for (int i = segment.first; i <= segment.last; ++i) {
    if (flow.ops[i].rescaledCombine) return flow.ops[i].reducedVars.at(0);
  }
  return -1;
}

}  // namespace mugraph::search
