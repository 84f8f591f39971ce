// Strict JSON (io/strict_json.h): what Python's json accepts passes; what it refuses, duplicate
// keys and non-finite numbers are located errors (issue 35, D13/D14).
#include "io/strict_json.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

std::string ErrorOf(const std::string& text) {
  const Status status = CheckStrictJson(text, "c.json", "a test file");
  return status.ok() ? "" : status.error().message;
}

TEST(StrictJsonTest, AcceptsWhatPythonAccepts) {
  for (const char* text :
       {"{}", "[]", " {\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": -0.5e+3}}\n", "\"s\"",
        "0", "-0", "1E5", "{\"\\u00e9\\ud83d\\ude00\\n\\\"\\\\\\/\": \"\xc3\xa9\"}",
        "{\"a\": {}, \"b\": {\"a\": 1}}", "\t[1,\r\n2]"}) {
    EXPECT_EQ(ErrorOf(text), "") << text;
  }
}

TEST(StrictJsonTest, RefusesDuplicateKeysNamingBothLines) {
  EXPECT_EQ(ErrorOf("{\n  \"layers\": 32,\n  \"heads\": 8,\n  \"layers\": 16\n}"),
            "c.json:4:3: key 'layers' given twice in one object (first on line 2) (expected each "
            "key once: delete one; Python's json, which a test file is read with, would silently "
            "keep the last)");
  // Keys compare decoded, as Python compares them.
  EXPECT_NE(ErrorOf("{\"a\": 1, \"\\u0061\": 2}"), "");
  // The same key in two objects is no duplicate.
  EXPECT_EQ(ErrorOf("[{\"a\": 1}, {\"a\": 2}]"), "");
}

TEST(StrictJsonTest, ManyKeysAreLinear) {
  std::string text = "{";
  for (int key = 0; key < 100000; ++key) {
    text += (key == 0 ? "\"k" : ",\"k") + std::to_string(key) + "\":1";
  }
  text += ",\"k7\":2}";
  EXPECT_NE(ErrorOf(text).find("key 'k7' given twice"), std::string::npos);
}

TEST(StrictJsonTest, RefusesWhatPythonRefuses) {
  EXPECT_EQ(ErrorOf("{'a': 1}"),
            "c.json:1:2: a key in single quotes (expected a key in double quotes, \"like_this\"; "
            "a test file is read with Python's json, which refuses this)");
  EXPECT_EQ(ErrorOf("train_batch_size: 8\n"),
            "c.json:1:1: unexpected word 'train_batch_size' where a value was expected (expected "
            "a value: an object, an array, a \"string\", a number, true, false or null (a key in "
            "double quotes: JSON, not YAML or Python); a test file is read with Python's json, "
            "which refuses this)");
  for (const char* text :
       {"{\"a\": 1,}", "[1,]",           "{\"a\" 1}",   "{a: 1}", "[01]",         "[1.]",
        "[.5]",        "[+1]",           "[0x10]",      "[1e]",   "{\"a\": 1} x", "",
        "[\"a\tb\"]",  "[\"\\x\"]",      "[\"\\u12\"]", "[\"abc", "[1 2]",        "[True]",
        "{\"a\": 1",   "\xEF\xBB\xBF{}", "[\"\xff\"]",  "[nullx]"}) {
    const std::string error = ErrorOf(text);
    EXPECT_EQ(error.rfind("c.json:1:", 0), 0u) << text << " -> " << error;
  }
}

TEST(StrictJsonTest, RefusesNonFiniteNumbers) {
  for (const char* text : {"[NaN]", "[Infinity]", "[-Infinity]", "[1e400]", "[-1e999]"}) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find("finite"), std::string::npos) << text << " -> " << error;
  }
}

TEST(StrictJsonTest, CapsTheDepthWithoutRecursion) {
  EXPECT_EQ(ErrorOf(std::string(100, '[') + std::string(100, ']')), "");
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(ErrorOf(deep),
            "c.json:1:101: arrays and objects nested more than 100 deep (expected at most 100 "
            "levels)");
}

}  // namespace
}  // namespace stagecraft
