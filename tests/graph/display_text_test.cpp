// graph/display_text.h: which bytes are writable text, and how the rest is shown.
#include <gtest/gtest.h>

#include "graph/display_text.h"

namespace mugraph::graph {
namespace {

TEST(DisplayText, ValidUtf8AcceptsEveryWellFormedLengthAndRejectsMalformedForms) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("node_pow_1"));
  EXPECT_TRUE(isValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(isValidUtf8("node_pow_\xff"));                        // never a UTF-8 byte
  EXPECT_FALSE(isValidUtf8("\x80"));                                 // a lone continuation
  EXPECT_FALSE(isValidUtf8("\xc3("));                                // lead without continuation
  EXPECT_FALSE(isValidUtf8("\xe2\x82"));                             // truncated at the end
  EXPECT_FALSE(isValidUtf8("\xc0\xaf"));                             // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xe0\x80\xaf"));                         // overlong, three bytes
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));                         // a UTF-16 surrogate
  EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80"));                     // past U+10FFFF
}

TEST(DisplayText, WritableNamesAreValidUtf8WithoutControlCharacters) {
  EXPECT_TRUE(isWritableName("/model/layers.0/MatMul_1"));
  EXPECT_TRUE(isWritableName("gewicht_\xc3\xa4"));
  EXPECT_FALSE(isWritableName("a\nb"));
  EXPECT_FALSE(isWritableName("\x1b[31mred"));
  EXPECT_FALSE(isWritableName("del\x7f"));
  EXPECT_FALSE(
      isWritableName("pow\x80"
                     "1"));
}

TEST(DisplayText, EscapingShowsEachBadByteAndKeepsTextAndLineFeeds) {
  EXPECT_EQ(escapeForDisplay("node_pow_\xff"), "node_pow_\\xff");
  EXPECT_EQ(escapeForDisplay("\x1b[31m\t"), "\\x1b[31m\\x09");
  EXPECT_EQ(escapeForDisplay("two\nlines \xe2\x82\xac"), "two\nlines \xe2\x82\xac");
  EXPECT_EQ(escapeForDisplay("\xe2\x82"), "\\xe2\\x82");  // a truncated sequence, byte by byte
  EXPECT_EQ(escapeForDisplay(std::string("a\0b", 3)), "a\\x00b");
  const std::string all = [] {
    std::string bytes;
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
    return bytes;
  }();
  EXPECT_TRUE(isValidUtf8(escapeForDisplay(all)));
}

}  // namespace
}  // namespace mugraph::graph
