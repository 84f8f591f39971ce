#include "io/toml.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

TEST(TomlTest, ReadsTheSubsetTorchtitanWrites) {
  const std::string text =
      "# a comment\n"
      "[model]\n"
      "name = \"llama3\"  # trailing comment\n"
      "flavor = '8B'\n"
      "converters = [\"float8\",\n   'mx', # inside\n]\n"
      "\n[training]\n"
      "local_batch_size = 1_024\n"
      "lr = 3e-4\n"
      "neg = -1\n"
      "compile = true\n"
      "escaped = \"a\\\"b\\u00e9\"\n";
  auto parsed = ParseToml(text, "job.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const TomlDocument& document = parsed.value();
  ASSERT_EQ(document.tables.size(), 3u);
  const TomlTable* model = document.Find("model");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->line, 2);
  EXPECT_EQ(model->keys[0].second.text, "llama3");
  EXPECT_EQ(model->keys[1].second.text, "8B");
  EXPECT_EQ(model->keys[2].second.kind, TomlValue::Kind::kStringArray);
  EXPECT_EQ(model->keys[2].second.strings, (std::vector<std::string>{"float8", "mx"}));
  const TomlTable* training = document.Find("training");
  ASSERT_NE(training, nullptr);
  EXPECT_EQ(training->keys[0].second.integer, 1024);
  EXPECT_EQ(training->keys[0].second.line, 10);
  EXPECT_EQ(training->keys[1].second.kind, TomlValue::Kind::kFloat);
  EXPECT_DOUBLE_EQ(training->keys[1].second.number, 3e-4);
  EXPECT_EQ(training->keys[2].second.integer, -1);
  EXPECT_TRUE(training->keys[3].second.boolean);
  EXPECT_EQ(training->keys[4].second.text, "a\"b\xc3\xa9");
}

// torchtitan's module_fqns_per_model_part: an array of arrays of strings, over several lines,
// a trailing comma and comments between the items allowed (TOML 1.0).
TEST(TomlTest, ReadsArraysOfArraysOfStrings) {
  const std::string text =
      "[parallelism]\nmodule_fqns_per_model_part = [\n  [\"tok_embeddings\", \"layers.0\"],  # "
      "one\n"
      "  [],\n  [\"layers.1\", 'norm', \"output\",],\n]\n";
  auto parsed = ParseToml(text, "job.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const TomlValue& value = parsed.value().Find("parallelism")->keys[0].second;
  EXPECT_EQ(value.kind, TomlValue::Kind::kStringArrays);
  EXPECT_EQ(value.line, 2);
  EXPECT_EQ(value.arrays, (std::vector<std::vector<std::string>>{
                              {"tok_embeddings", "layers.0"}, {}, {"layers.1", "norm", "output"}}));
  EXPECT_STREQ(TomlKindName(value.kind), "an array of arrays of strings");
}

TEST(TomlTest, ErrorsNameLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[a]\nx = 1\nx = 2\n", "t.toml:3:5: key 'x' given twice in [a] (first on line 2)"},
      {"[a]\n[a]\n", "t.toml:2:4: table [a] defined twice (first on line 1)"},
      {"[a]\nx = \"open\n", "t.toml:2:10: unterminated string (expected a closing \")"},
      {"[a]\nx = {y = 1}\n",
       "t.toml:2:5: inline tables are not read (expected a string, number or boolean)"},
      {"[a]\nx = 1979-05-27\n",
       "t.toml:2:5: '1979-05-27' is not a value stagecraft reads (expected a \"string\", an "
       "integer, "
       "a float, true, false or an array of strings; dates are not read)"},
      {"[a]\nx = 1 2\n",
       "t.toml:2:7: unexpected '2' (expected the end of the line or a # comment)"},
      {"[[a]]\n",
       "t.toml:1:2: arrays of tables ([[name]]) are not read (expected a [table] header)"},
      {"[a]\nx.y = 1\n",
       "t.toml:2:2: dotted keys are not read (expected a bare key; use a [table])"},
      {"[a]\nx = [1, 2]\n",
       "t.toml:2:6: arrays of strings only are read (expected a \"string\" or ']')"},
      {"[a]\nx = 99999999999999999999\n",
       "t.toml:2:5: integer '99999999999999999999' is out of range (64-bit)"},
      {"[a]\nx = 1__0\n", "t.toml:2:5: '1__0': '_' must sit between two digits"},
      {"[a]\nx = [[\"a\"], \"b\"]\n",
       "t.toml:2:13: an array of arrays holds arrays only (expected '[' or ']')"},
      {"[a]\nx = [[[\"a\"]]]\n",
       "t.toml:2:7: arrays nest one level, of strings (expected a \"string\" or ']')"},
      {"[a]\nx = [\"a\", [\"b\"]]\n",
       "t.toml:2:11: arrays nest one level, of strings (expected a \"string\" or ']')"},
  };
  for (const auto& [text, message] : cases) {
    auto parsed = ParseToml(text, "t.toml");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().message, message) << text;
  }
}

}  // namespace
}  // namespace stagecraft
