#include "report/json_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/internal_error.h"

namespace stagecraft {
namespace {

TEST(JsonWriterTest, CompactNestingAndCommas) {
  JsonWriter json(/*pretty=*/false);
  json.BeginObject();
  json.Key("a").Int(1);
  json.Key("b").BeginArray().Int(-2).String("x").BeginObject().EndObject().BeginArray().EndArray();
  json.BeginObject().Key("k").Bool(false).EndObject();
  json.EndArray();
  json.Key("c").Bool(true);
  json.Key("d").Raw("1.500");
  json.EndObject();
  EXPECT_EQ(json.text(), R"({"a":1,"b":[-2,"x",{},[],{"k":false}],"c":true,"d":1.500})");
}

TEST(JsonWriterTest, PrettyIndentsTwoSpacesOneMemberPerLine) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("a").Int(1);
  json.Key("b").BeginArray().Int(1).String("x").EndArray();
  json.Key("e").BeginObject().EndObject();
  json.Key("f").BeginArray().EndArray();
  json.EndObject();
  EXPECT_EQ(json.text(),
            "{\n"
            "  \"a\": 1,\n"
            "  \"b\": [\n"
            "    1,\n"
            "    \"x\"\n"
            "  ],\n"
            "  \"e\": {},\n"
            "  \"f\": []\n"
            "}");
}

TEST(JsonWriterTest, TopLevelArray) {
  JsonWriter json(/*pretty=*/false);
  json.BeginArray().Int(1).Int(2).BeginArray().Int(3).EndArray().EndArray();
  EXPECT_EQ(json.text(), "[1,2,[3]]");
}

TEST(JsonWriterTest, EscapesStringsAndKeys) {
  JsonWriter json(/*pretty=*/false);
  json.BeginObject().Key("q\"k").String("a\"b\\c\nd\te\rf\x01g\x1f").EndObject();
  EXPECT_EQ(json.text(), R"({"q\"k":"a\"b\\c\nd\te\rf\u0001g\u001f"})");
}

TEST(JsonWriterTest, JsonEscape) {
  EXPECT_EQ(JsonEscape(""), "");
  EXPECT_EQ(JsonEscape("plain text / slash"), "plain text / slash");
  EXPECT_EQ(JsonEscape("\"\\"), "\\\"\\\\");
  EXPECT_EQ(JsonEscape(std::string("nul\0byte", 8)), "nul\\u0000byte");
  EXPECT_EQ(JsonEscape("\x7f"), "\x7f");  // DEL needs no escape in JSON
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \xe2\x86\x92"), "caf\xc3\xa9 \xe2\x86\x92");  // UTF-8 kept
}

TEST(JsonWriterTest, FixedDecimals) {
  JsonWriter json(/*pretty=*/false);
  json.BeginArray();
  json.Fixed(0.272727272727, 6).Fixed(2.0, 3).Fixed(-0.0, 3).Fixed(-0.00001, 3).Fixed(1e6, 2);
  json.Fixed(2.4, 0).Fixed(1.0 / 3.0, 10);
  json.EndArray();
  EXPECT_EQ(json.text(), "[0.272727,2.000,0.000,0.000,1000000.00,2,0.3333333333]");
}

TEST(JsonWriterTest, IntExtremes) {
  JsonWriter json(/*pretty=*/false);
  json.BeginArray().Int(INT64_MAX).Int(INT64_MIN).Int(0).EndArray();
  EXPECT_EQ(json.text(), "[9223372036854775807,-9223372036854775808,0]");
}

// Issue 35, D10: goodput --json printed bare inf and -nan, which no JSON reader accepts. A
// non-finite figure is our bug (the inputs that make one are refused): the writer throws.
TEST(JsonWriterTest, RefusesWhatIsNotAJsonNumber) {
  const double infinity = std::numeric_limits<double>::infinity();
  JsonWriter json(/*pretty=*/false);
  json.BeginObject().Key("ettr");
  try {
    json.Fixed(infinity, 4);
    FAIL() << "inf was written: " << json.text();
  } catch (const InternalError& error) {
    EXPECT_EQ(std::string(error.what()),
              "the JSON writer was given 'inf' for 'ettr', not a finite number; no JSON was "
              "printed");
  }
  for (const char* bad : {"-nan", "nan", "+1", "01", "1.", ".5", "1e", "1e+", "", "--1"}) {
    JsonWriter other(/*pretty=*/false);
    EXPECT_THROW(other.Raw(bad), InternalError) << bad;
  }
  for (const char* good : {"0", "-0.000", "12.5", "1e-05", "2E+10", "-3", "true", "null"}) {
    JsonWriter other(/*pretty=*/false);
    EXPECT_NO_THROW(other.Raw(good)) << good;
    EXPECT_EQ(other.text(), good);
  }
}

}  // namespace
}  // namespace stagecraft
