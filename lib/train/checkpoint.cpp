#include "edgeattn/train/checkpoint.hpp"

#include <charconv>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/sha256.hpp"

namespace edgeattn::train {
namespace {

constexpr char kMagic[8] = {'E', 'A', 'T', 'N', 'M', 'O', 'D', 'L'};
constexpr size_t kDigestBytes = 32;
// Sanity limits so a hostile header cannot ask for absurd allocations before the data runs out.
constexpr uint64_t kMaxNameBytes = 4096;

template <class T>
void put(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));
  out.append(buf, sizeof(T));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}
  template <class T>
  T get(const char* field) {
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string_view take(uint64_t n, const char* field) {
    need(n, field);
    const std::string_view s = bytes_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    raise<ParseError>(what_, ": at byte offset ", pos_, ": ", std::forward<Args>(args)...);
  }

 private:
  void need(uint64_t n, const char* field) const {
    if (n > remaining()) fail("the ", field, " needs ", n, " bytes but only ", remaining(), " remain");
  }
  std::string_view bytes_;
  const std::string& what_;
  size_t pos_ = 0;
};

}  // namespace

const Tensor& Checkpoint::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  std::string names;
  for (const auto& [n, t] : tensors) names += (names.empty() ? "" : ", ") + n;
  raise<InvalidArgument>("checkpoint has no tensor '", name, "' (it has: ", names, ")");
}

std::string serialize_checkpoint(const Checkpoint& c) {
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, kCheckpointVersion);
  put<uint32_t>(out, 0);
  put<uint64_t>(out, c.metadata.size());
  out += c.metadata;
  put<uint64_t>(out, c.tensors.size());
  for (const auto& [name, t] : c.tensors) {
    put<uint32_t>(out, static_cast<uint32_t>(name.size()));
    out += name;
    put<uint32_t>(out, static_cast<uint32_t>(t.rank()));
    for (int d = 0; d < t.rank(); ++d) put<int64_t>(out, t.dim(d));
    out.append(reinterpret_cast<const char*>(t.data()), static_cast<size_t>(t.numel()) * sizeof(float));
  }
  Sha256 h;
  h.update(out);
  const auto digest = h.digest();
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return out;
}

Checkpoint parse_checkpoint(std::string_view bytes, const std::string& what) {
  if (bytes.size() < sizeof kMagic + 8 + kDigestBytes ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    raise<ParseError>(what, ": not an edgeattn model file (it does not start with \"EATNMODL\")");
  const std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  Sha256 h;
  h.update(body);
  const auto digest = h.digest();
  if (std::memcmp(digest.data(), bytes.data() + body.size(), kDigestBytes) != 0)
    raise<ChecksumError>(what, ": checksum mismatch: the file is corrupt or truncated (", bytes.size(),
                         " bytes)");

  Reader r(body, what);
  r.take(sizeof kMagic, "magic");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kCheckpointVersion)
    r.fail("format version ", version, ", this build reads version ", kCheckpointVersion);
  const uint32_t flags = r.get<uint32_t>("flags");
  if (flags != 0) r.fail("unknown flags ", flags);
  Checkpoint c;
  const uint64_t meta = r.get<uint64_t>("metadata length");
  c.metadata = std::string(r.take(meta, "metadata"));
  const uint64_t count = r.get<uint64_t>("tensor count");
  if (count > r.remaining()) r.fail("tensor count ", count, " exceeds the remaining bytes");
  std::set<std::string> seen;
  for (uint64_t k = 0; k < count; ++k) {
    const uint32_t name_len = r.get<uint32_t>("tensor name length");
    if (name_len > kMaxNameBytes) r.fail("tensor ", k, " has a name of ", name_len, " bytes");
    std::string name(r.take(name_len, "tensor name"));
    if (!seen.insert(name).second) r.fail("tensor '", name, "' appears twice");
    const uint32_t rank = r.get<uint32_t>("tensor rank");
    if (rank > static_cast<uint32_t>(Shape::kMaxRank))
      r.fail("tensor '", name, "' has rank ", rank, ", at most ", Shape::kMaxRank);
    std::vector<int64_t> dims(rank);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      dims[d] = r.get<int64_t>("tensor extent");
      if (dims[d] < 0) r.fail("tensor '", name, "' has extent ", dims[d]);
      if (dims[d] > 0 && numel > r.remaining() / static_cast<uint64_t>(dims[d]))
        r.fail("tensor '", name, "' is larger than the file");
      numel *= static_cast<uint64_t>(dims[d]);
    }
    const std::string_view data = r.take(numel * sizeof(float), "tensor data");
    Tensor t{Shape(std::span<const int64_t>(dims))};
    if (numel > 0) std::memcpy(t.data(), data.data(), data.size());
    c.tensors.emplace_back(std::move(name), std::move(t));
  }
  if (r.remaining() != 0) r.fail(r.remaining(), " unexpected bytes after the last tensor");
  return c;
}

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  write_file_atomic(path, serialize_checkpoint(checkpoint));
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  return parse_checkpoint(read_file(path), path.string());
}

void save_parameters(const std::filesystem::path& path, const std::vector<autograd::Parameter*>& parameters,
                     const std::string& metadata) {
  Checkpoint c;
  c.metadata = metadata;
  for (const autograd::Parameter* p : parameters) c.tensors.emplace_back(p->name, p->value);
  save_checkpoint(path, c);
}

void load_parameters(const Checkpoint& c, const std::vector<autograd::Parameter*>& parameters) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [n, t] : c.tensors) by_name[n] = &t;
  std::set<std::string> wanted;
  for (const autograd::Parameter* p : parameters) {
    wanted.insert(p->name);
    const auto it = by_name.find(p->name);
    if (it == by_name.end()) raise<InvalidArgument>("model file lacks parameter '", p->name, "'");
    if (!(it->second->shape() == p->value.shape()))
      raise<ShapeError>("model file has parameter '", p->name, "' of shape ", it->second->shape().str(),
                        ", the model expects ", p->value.shape().str());
  }
  for (const auto& [n, t] : c.tensors)
    if (n.find(':') == std::string::npos && !wanted.contains(n))
      raise<InvalidArgument>("model file has parameter '", n, "' that the model does not have");
  for (autograd::Parameter* p : parameters) p->value = *by_name[p->name];
}

namespace {

constexpr const char* kStateLine = "training_state ";

std::string exact(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
  return std::string(buf, r.ptr);
}

double parse_double(const std::string& text, const std::string& what) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size())
    raise<ParseError>(what, ": '", text, "' is not a number");
  return v;
}

}  // namespace

void save_training_state(const std::filesystem::path& path,
                         const std::vector<autograd::Parameter*>& parameters, const TrainingState& state,
                         const std::string& metadata) {
  if (state.optimizer.m.size() != parameters.size() || state.optimizer.v.size() != parameters.size())
    raise<InvalidArgument>("save_training_state: optimiser moments for ", state.optimizer.m.size(),
                           " parameters, ", parameters.size(), " given");
  Checkpoint c;
  std::ostringstream line;
  line << kStateLine << "next_epoch=" << state.next_epoch << " stopped=" << (state.stopped ? 1 : 0)
       << " adam_steps=" << state.optimizer.steps << " best_loss=" << exact(state.early_stopping.best_loss)
       << " best_accuracy=" << exact(state.early_stopping.best_accuracy)
       << " best_epoch=" << state.early_stopping.best_epoch
       << " bad_epochs=" << state.early_stopping.bad_epochs << " train_seconds=" << exact(state.train_seconds)
       << " final_evaluation_pending=" << (state.final_evaluation_pending ? 1 : 0) << " history=";
  for (size_t k = 0; k < state.history.size(); ++k) {
    const EpochStats& e = state.history[k];
    line << (k ? ";" : "") << e.epoch;
    for (double v : {e.train_loss, e.train_accuracy, e.val_loss, e.val_accuracy, e.test_loss, e.test_accuracy,
                     e.train_seconds, e.eval_seconds})
      line << ':' << exact(v);
    line << ':' << (e.evaluated ? 1 : 0);
  }
  c.metadata = metadata;
  if (!c.metadata.empty() && c.metadata.back() != '\n') c.metadata += '\n';
  c.metadata += line.str() + "\n";
  for (size_t k = 0; k < parameters.size(); ++k) {
    const autograd::Parameter* p = parameters[k];
    c.tensors.emplace_back(p->name, p->value);
    const Shape shape{p->value.numel()};
    c.tensors.emplace_back("adam.m:" + p->name, Tensor(shape, state.optimizer.m[k]));
    c.tensors.emplace_back("adam.v:" + p->name, Tensor(shape, state.optimizer.v[k]));
    if (!state.early_stopping.snapshot.empty())
      c.tensors.emplace_back("best:" + p->name, state.early_stopping.snapshot[k]);
  }
  save_checkpoint(path, c);
}

LoadedTrainingState load_training_state(const std::filesystem::path& path,
                                        const std::vector<autograd::Parameter*>& parameters) {
  return load_training_state(load_checkpoint(path), path.string(), parameters);
}

LoadedTrainingState load_training_state(const Checkpoint& c, const std::string& what,
                                        const std::vector<autograd::Parameter*>& parameters) {
  LoadedTrainingState out;
  const size_t at = c.metadata.rfind(kStateLine);
  if (at == std::string::npos || (at > 0 && c.metadata[at - 1] != '\n'))
    raise<ParseError>(what, ": a model file without training state (written by --save, not --checkpoint)");
  out.metadata = c.metadata.substr(0, at);
  std::map<std::string, std::string> kv;
  std::istringstream in(c.metadata.substr(at + std::strlen(kStateLine)));
  std::string token;
  while (in >> token) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos)
      raise<ParseError>(what, ": training state: expected key=value, found '", token, "'");
    kv[token.substr(0, eq)] = token.substr(eq + 1);
  }
  auto get = [&](const char* key) -> const std::string& {
    const auto it = kv.find(key);
    if (it == kv.end()) raise<ParseError>(what, ": training state: '", key, "' is missing");
    return it->second;
  };
  auto integer = [&](const char* key) {
    const double v = parse_double(get(key), what + ": training state: " + key);
    if (v != static_cast<double>(static_cast<int64_t>(v)))
      raise<ParseError>(what, ": training state: ", key, " is '", get(key), "', expected an integer");
    return static_cast<int64_t>(v);
  };
  TrainingState& st = out.state;
  st.next_epoch = integer("next_epoch");
  st.stopped = integer("stopped") != 0;
  st.optimizer.steps = integer("adam_steps");
  st.early_stopping.best_loss = parse_double(get("best_loss"), what + ": best_loss");
  st.early_stopping.best_accuracy = parse_double(get("best_accuracy"), what + ": best_accuracy");
  st.early_stopping.best_epoch = integer("best_epoch");
  st.early_stopping.bad_epochs = integer("bad_epochs");
  st.train_seconds = parse_double(get("train_seconds"), what + ": train_seconds");
  // Files written before the key: the state after every evaluation (TrainingState).
  if (kv.contains("final_evaluation_pending")) {
    const int64_t pending = integer("final_evaluation_pending");
    if (pending != 0 && pending != 1)
      raise<ParseError>(what, ": training state: final_evaluation_pending is ", pending, ", expected 0 or 1");
    st.final_evaluation_pending = pending == 1;
  }
  std::istringstream hist(get("history"));
  std::string entry;
  while (std::getline(hist, entry, ';')) {
    std::vector<double> v;
    std::istringstream fields(entry);
    std::string f;
    while (std::getline(fields, f, ':')) v.push_back(parse_double(f, what + ": history"));
    // 10 fields: the 10th is EpochStats::evaluated (1 or 0); files written before it have 9, every
    // epoch evaluated.
    if (v.size() != 9 && v.size() != 10)
      raise<ParseError>(what, ": history entry '", entry, "' has ", v.size(), " fields, expected 10");
    if (v.size() == 10 && v[9] != 0.0 && v[9] != 1.0)
      raise<ParseError>(what, ": history entry '", entry, "' ends in ", v[9],
                        ", expected 1 (evaluated) or 0");
    st.history.push_back({.epoch = static_cast<int64_t>(v[0]),
                          .train_loss = v[1],
                          .train_accuracy = v[2],
                          .val_loss = v[3],
                          .val_accuracy = v[4],
                          .test_loss = v[5],
                          .test_accuracy = v[6],
                          .train_seconds = v[7],
                          .eval_seconds = v[8],
                          .evaluated = v.size() == 9 || v[9] == 1.0});
  }
  if (static_cast<int64_t>(st.history.size()) != st.next_epoch)
    raise<ParseError>(what, ": training state at epoch ", st.next_epoch, " with ", st.history.size(),
                      " epochs of history");
  load_parameters(c, parameters);
  for (const autograd::Parameter* p : parameters) {
    const Tensor& m = c.get("adam.m:" + p->name);
    const Tensor& v = c.get("adam.v:" + p->name);
    if (m.numel() != p->value.numel() || v.numel() != p->value.numel())
      raise<ShapeError>(what, ": the optimiser moments of ", p->name, " have ", m.numel(), " and ", v.numel(),
                        " values, expected ", p->value.numel());
    st.optimizer.m.emplace_back(m.span().begin(), m.span().end());
    st.optimizer.v.emplace_back(v.span().begin(), v.span().end());
    if (st.early_stopping.best_epoch >= 0) st.early_stopping.snapshot.push_back(c.get("best:" + p->name));
  }
  return out;
}

}  // namespace edgeattn::train
