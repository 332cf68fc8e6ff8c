// Tests of the tool's argument parser (built by examples/CMakeLists.txt as tools_args_test).
#include "args.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace edgeattn::cli {
namespace {

Args make_args() {
  Args args("edgeattn test", "A test command.");
  args.option("nodes", "N", "100", "number of nodes")
      .option("pattern", "P", "", "pattern")
      .flag("no-dense", "skip");
  return args;
}

std::string usage_message(const std::vector<std::string>& argv) {
  Args args = make_args();
  try {
    args.parse(argv);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Args, DefaultsApplyWhenOptionsAreNotGiven) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{}));
  EXPECT_EQ(args.integer("nodes"), 100);
  EXPECT_FALSE(args.given("nodes"));
  EXPECT_FALSE(args.flag_set("no-dense"));
  EXPECT_EQ(args.str("pattern"), "");
}

TEST(Args, SpaceAndEqualsFormsBothSetValues) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "7", "--pattern=window:3", "--no-dense"}));
  EXPECT_EQ(args.integer("nodes"), 7);
  EXPECT_TRUE(args.given("nodes"));
  EXPECT_EQ(args.str("pattern"), "window:3");
  EXPECT_TRUE(args.flag_set("no-dense"));
}

TEST(Args, EqualsFormKeepsAnEmptyOrEqualsContainingValue) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--pattern=a=b"}));
  EXPECT_EQ(args.str("pattern"), "a=b");
}

TEST(Args, LaterOccurrenceWins) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "1", "--nodes=2"}));
  EXPECT_EQ(args.integer("nodes"), 2);
}

TEST(Args, HelpAnywhereStopsParsingAndReturnsFalse) {
  Args args = make_args();
  EXPECT_FALSE(args.parse(std::vector<std::string>{"--bogus", "--help"}));
  const std::string help = args.help();
  EXPECT_NE(help.find("usage: edgeattn test [options]"), std::string::npos);
  EXPECT_NE(help.find("--nodes N"), std::string::npos);
  EXPECT_NE(help.find("(default: 100)"), std::string::npos);
}

TEST(Args, UnknownOptionMessageNamesItAndListsTheValidOnes) {
  const std::string msg = usage_message({"--nodse", "5"});
  EXPECT_NE(msg.find("unknown option --nodse"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--nodes, --pattern, --no-dense, --help"), std::string::npos) << msg;
}

TEST(Args, MissingValueIsAUsageError) {
  EXPECT_NE(usage_message({"--nodes"}).find("--nodes needs a value"), std::string::npos);
}

TEST(Args, FlagWithAValueIsAUsageError) {
  EXPECT_NE(usage_message({"--no-dense=1"}).find("--no-dense takes no value"), std::string::npos);
}

TEST(Args, PositionalArgumentIsAUsageError) {
  EXPECT_NE(usage_message({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
  EXPECT_NE(usage_message({"-x"}).find("unexpected argument '-x'"), std::string::npos);
}

TEST(Args, MalformedOrOutOfRangeIntegerNamesTheOption) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "12abc"}));
  EXPECT_THROW(args.integer("nodes"), UsageError);
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "0"}));
  try {
    args.integer("nodes", 1);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--nodes is 0, expected >= 1");
  }
  try {
    args.integer("nodes", 1, 10);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--nodes is 0, expected in [1, 10]");
  }
}

TEST(Args, AnIntegerBeyond64BitsIsOutOfRangeNotMalformed) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "18446744073709551615"}));
  try {
    args.integer("nodes", 0);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--nodes is 18446744073709551615, beyond the 64-bit integers; expected >= 0");
  }
}

TEST(Args, NaNIsOutsideEveryRange) {
  Args args = make_args();
  for (const char* text : {"nan", "NaN", "-nan"}) {
    ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", text}));
    try {
      (void)args.real("nodes", 0.0, 1.0);
      FAIL() << "expected UsageError for " << text;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--nodes is ") + text + ", expected in [0, 1]");
    }
  }
  ASSERT_TRUE(args.parse(std::vector<std::string>{"--nodes", "inf"}));
  EXPECT_THROW((void)args.real("nodes", 0.0, 10.0), UsageError);
}

TEST(Args, ReadingAnUndeclaredOptionIsAProgrammingError) {
  Args args = make_args();
  ASSERT_TRUE(args.parse(std::vector<std::string>{}));
  EXPECT_THROW(args.str("nope"), std::logic_error);
}

}  // namespace
}  // namespace edgeattn::cli
