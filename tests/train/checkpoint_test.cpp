#include "edgeattn/train/checkpoint.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "edgeattn/core/file_io.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::train {
namespace {

using autograd::Parameter;
using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::TempDir;
namespace fs = std::filesystem;

std::vector<Parameter> model() {
  std::vector<Parameter> ps(2);
  ps[0].name = "conv1.lin.weight";
  ps[0].value = Tensor({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  ps[1].name = "conv1.bias";
  ps[1].value = Tensor({2}, std::vector<float>{-0.5f, 0.25f});
  return ps;
}

std::vector<Parameter*> ptrs(std::vector<Parameter>& ps) {
  std::vector<Parameter*> out;
  for (auto& p : ps) out.push_back(&p);
  return out;
}

TEST(Checkpoint, SaveThenLoadRestoresEveryParameterExactly) {
  auto saved = model();
  const TempDir dir;
  const fs::path path = dir / "roundtrip.model";
  save_parameters(path, ptrs(saved), R"({"model": "gat"})");
  auto loaded = model();
  loaded[0].value.fill(0.f);
  loaded[1].value.fill(0.f);
  const Checkpoint c = load_checkpoint(path);
  EXPECT_EQ(c.metadata, R"({"model": "gat"})");
  load_parameters(c, ptrs(loaded));
  for (size_t k = 0; k < saved.size(); ++k) EXPECT_EQ(max_abs_diff(saved[k].value, loaded[k].value), 0.f);
}

TEST(Checkpoint, EveryFlippedByteIsDetected) {
  auto ps = model();
  Checkpoint c;
  for (auto& p : ps) c.tensors.emplace_back(p.name, p.value);
  const std::string bytes = serialize_checkpoint(c);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    EXPECT_THROW(parse_checkpoint(bad, "flipped"), Error) << "byte " << i;
  }
}

TEST(Checkpoint, TruncatedFileIsAChecksumErrorNamingTheFile) {
  auto ps = model();
  const TempDir dir;
  const fs::path path = dir / "truncated.model";
  save_parameters(path, ptrs(ps), "");
  std::string bytes = read_file(path);
  bytes.resize(bytes.size() - 7);
  write_file_atomic(path, bytes);
  expect_throw_naming<ChecksumError>([&] { load_checkpoint(path); },
                                     {"truncated.model", "corrupt or truncated"});
}

TEST(Checkpoint, ForeignFileIsRejectedByItsMagic) {
  const TempDir dir;
  const fs::path path = dir / "foreign.model";
  write_file_atomic(path, std::string(100, 'x'));
  expect_throw_naming<ParseError>([&] { load_checkpoint(path); },
                                  {"foreign.model", "not an edgeattn model file"});
}

TEST(Checkpoint, ShapeMismatchNamesTheParameter) {
  auto saved = model();
  Checkpoint c;
  for (auto& p : saved) c.tensors.emplace_back(p.name, p.value);
  auto other = model();
  other[0].value = Tensor({3, 2});
  expect_throw_naming<ShapeError>([&] { load_parameters(c, ptrs(other)); },
                                  {"conv1.lin.weight", "[2, 3]", "[3, 2]"});
  EXPECT_EQ(other[1].value(0), -0.5f);  // nothing was copied
}

TEST(Checkpoint, MissingAndExtraParametersAreNamed) {
  auto saved = model();
  Checkpoint c;
  c.tensors.emplace_back(saved[0].name, saved[0].value);
  auto full = model();
  expect_throw_naming<InvalidArgument>([&] { load_parameters(c, ptrs(full)); },
                                       {"lacks parameter 'conv1.bias'"});
  std::vector<Parameter*> one = {&full[0]};
  c.tensors.emplace_back(saved[1].name, saved[1].value);
  expect_throw_naming<InvalidArgument>([&] { load_parameters(c, one); }, {"'conv1.bias'", "does not have"});
}

}  // namespace
}  // namespace edgeattn::train
