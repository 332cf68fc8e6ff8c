// A small command-line parser for the edgeattn tool: `--name value`, `--name=value` and `--flag`.
//
// Each subcommand declares its options, parses, and reads typed values. Mistakes (unknown option,
// missing or malformed value, stray argument) raise UsageError, which main() prints and turns into
// exit code 2. An unknown option's message lists the valid ones.
//
// Example:
//   Args args("edgeattn bench attention", "Time one attention configuration.");
//   args.option("nodes", "N", "65536", "number of nodes").flag("no-dense", "skip the dense path");
//   if (!args.parse(argv_tail)) { std::cout << args.help(); return 0; }   // --help was given
//   int64_t n = args.integer("nodes", /*min=*/1);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::cli {

/// A mistake on the command line; main() prints it and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  /// `command` is how the user invoked it ("edgeattn demo"); `summary` opens the help text.
  Args(std::string command, std::string summary);

  /// Declares `--name VALUE_NAME`. `default_value` is used when the option is not given and is
  /// shown in --help; an empty default means "not set" (see `given`).
  Args& option(const std::string& name, const std::string& value_name, const std::string& default_value,
               const std::string& help);
  /// Declares a boolean `--name` that takes no value.
  Args& flag(const std::string& name, const std::string& help);

  /// Declares one required positional argument (e.g. a dataset name or path).
  Args& positional(const std::string& value_name, const std::string& help);
  /// The positional argument's value (after a successful parse).
  const std::string& positional_value() const { return positional_.value; }

  /// Parses the arguments after the command words. Returns false if --help (or -h) was given, in
  /// which case nothing else is checked. Throws UsageError on any mistake.
  bool parse(std::span<const std::string> args);

  /// True if the option or flag appeared on the command line.
  bool given(const std::string& name) const;
  /// The option's value (its default when not given).
  const std::string& str(const std::string& name) const;
  /// The option's value as an integer in [min, max]; throws UsageError naming the option otherwise.
  int64_t integer(const std::string& name, int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  /// The option's value as a real number in [min, max]; UsageError naming the option otherwise.
  double real(const std::string& name, double min = -1e300, double max = 1e300) const;
  /// True if the flag was given.
  bool flag_set(const std::string& name) const;

  /// The --help text: usage line, summary, and one line per option with its default.
  std::string help() const;
  /// "--a, --b, --help": the valid options, for error messages.
  std::string option_list() const;
  const std::string& command() const { return command_; }

 private:
  struct Spec {
    std::string name, value_name, default_value, help;
    bool is_flag = false;
    bool given = false;
    std::string value;
  };
  const Spec& find(const std::string& name) const;
  Spec* lookup(const std::string& name);

  std::string command_, summary_;
  std::vector<Spec> specs_;
  Spec positional_;  // value_name empty: none declared
};

/// The integers of a comma-separated list ("15,10,5"), each >= min; std::nullopt when a field is
/// empty (the text itself, or ",," and a trailing comma) or not such an integer, and then
/// `bad_field`, when given, holds the first such field.
std::optional<std::vector<int64_t>> integer_list(std::string_view text, int64_t min,
                                                 std::string* bad_field = nullptr);

}  // namespace edgeattn::cli
