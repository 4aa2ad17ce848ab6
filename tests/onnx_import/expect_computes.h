// The imported program checked against the formula written by hand, at the finite-field
// level: the op mapping's, the function ops' and the importer's tests share it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "graph/program_text.h"
#include "verify/equivalence.h"

namespace mugraph::onnx_import {

inline void expectComputes(const graph::Program& imported, const std::string& expected) {
  const graph::Program reference = graph::parseProgramText(expected, "expected");
  const verify::EquivalenceReport r = verify::checkEquivalence(reference, imported, {});
  EXPECT_TRUE(r.equivalent) << r.mismatch << "\n" << graph::programToText(imported);
  EXPECT_EQ(r.level, verify::VerificationLevel::FiniteField) << r.levelReason;
}

}  // namespace mugraph::onnx_import
