#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace edgeattn::cli {

Args::Args(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

Args& Args::option(const std::string& name, const std::string& value_name, const std::string& default_value,
                   const std::string& help) {
  specs_.push_back({name, value_name, default_value, help, false, false, default_value});
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", "", help, true, false, ""});
  return *this;
}

Args& Args::positional(const std::string& value_name, const std::string& help) {
  positional_ = {"", value_name, "", help, false, false, ""};
  return *this;
}

Args::Spec* Args::lookup(const std::string& name) {
  for (Spec& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

const Args::Spec& Args::find(const std::string& name) const {
  for (const Spec& s : specs_)
    if (s.name == name) return s;
  // A typo in the tool's own code, not the user's: fail loudly.
  throw std::logic_error("Args: option --" + name + " was never declared for " + command_);
}

bool Args::parse(std::span<const std::string> args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return false;

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if ((arg.size() < 3 || arg.compare(0, 2, "--") != 0) && !positional_.value_name.empty() &&
        !positional_.given) {
      positional_.value = arg;
      positional_.given = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
      throw UsageError("unexpected argument '" + arg + "'; options start with --" +
                       " (valid options: " + option_list() + ")");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    Spec* spec = lookup(name);
    if (spec == nullptr)
      throw UsageError("unknown option --" + name + " (valid options: " + option_list() + ")");
    if (spec->is_flag) {
      if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
    } else if (eq != std::string::npos) {
      spec->value = arg.substr(eq + 1);
    } else {
      if (i + 1 == args.size()) throw UsageError("--" + name + " needs a value (" + spec->value_name + ")");
      spec->value = args[++i];
    }
    spec->given = true;
  }
  if (!positional_.value_name.empty() && !positional_.given)
    throw UsageError("missing " + positional_.value_name + " (" + positional_.help + ")");
  return true;
}

bool Args::given(const std::string& name) const { return find(name).given; }

const std::string& Args::str(const std::string& name) const { return find(name).value; }

int64_t Args::integer(const std::string& name, int64_t min, int64_t max) const {
  const std::string& text = str(name);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const auto out_of_range = [&](const std::string& found, const char* note) {
    std::ostringstream os;
    os << "--" << name << " is " << found << ", " << note << "expected ";
    if (max == std::numeric_limits<int64_t>::max())
      os << ">= " << min;
    else
      os << "in [" << min << ", " << max << "]";
    throw UsageError(os.str());
  };
  if (ec == std::errc::result_out_of_range && end == text.data() + text.size())
    out_of_range(text, "beyond the 64-bit integers; ");
  if (ec != std::errc() || end != text.data() + text.size())
    throw UsageError("--" + name + " expects an integer, got '" + text + "'");
  if (value < min || value > max) out_of_range(std::to_string(value), "");
  return value;
}

double Args::real(const std::string& name, double min, double max) const {
  const std::string& text = str(name);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw UsageError("--" + name + " expects a number, got '" + text + "'");
  if (!(value >= min && value <= max)) {  // NaN too: it compares false with every bound
    std::ostringstream os;
    os << "--" << name << " is " << text << ", expected in [" << min << ", " << max << "]";
    throw UsageError(os.str());
  }
  return value;
}

bool Args::flag_set(const std::string& name) const { return find(name).given; }

std::string Args::option_list() const {
  std::string out;
  for (const Spec& s : specs_) out += "--" + s.name + ", ";
  return out + "--help";
}

std::string Args::help() const {
  std::ostringstream os;
  os << "usage: " << command_ << " [options]"
     << (positional_.value_name.empty() ? "" : " " + positional_.value_name) << "\n\n"
     << summary_ << "\n\noptions:\n";
  std::vector<std::string> heads;
  size_t width = 0;
  for (const Spec& s : specs_) {
    heads.push_back("--" + s.name + (s.is_flag ? "" : " " + s.value_name));
    width = std::max(width, heads.back().size());
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    const Spec& s = specs_[i];
    os << "  " << heads[i] << std::string(width - heads[i].size() + 2, ' ') << s.help;
    if (!s.is_flag && !s.default_value.empty()) os << " (default: " << s.default_value << ")";
    os << "\n";
  }
  os << "  --help" << std::string(width > 6 ? width - 6 + 2 : 2, ' ') << "show this help and exit\n";
  return os.str();
}

std::optional<std::vector<int64_t>> integer_list(std::string_view text, int64_t min, std::string* bad_field) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view field = text.substr(pos, comma - pos);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size() || v < min) {
      if (bad_field) *bad_field = std::string(field);
      return std::nullopt;
    }
    out.push_back(v);
    if (comma == text.size()) return out;
    pos = comma + 1;
  }
}

}  // namespace edgeattn::cli
