#include "edgeattn/train/checkpoint.hpp"

#include <cstring>
#include <map>
#include <set>

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
    if (!wanted.contains(n))
      raise<InvalidArgument>("model file has parameter '", n, "' that the model does not have");
  for (autograd::Parameter* p : parameters) p->value = *by_name[p->name];
}

}  // namespace edgeattn::train
