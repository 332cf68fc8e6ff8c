// data::map_features: float32 [N, F] arrays of .npy files and stored .npz members read in place,
// load_npz(.map_features), write_npz's member alignment that makes that possible, and the
// refusals (wrong dtype, order, rank, a truncated, misaligned, deflated or missing member).
#include "edgeattn/data/mapped_features.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "data/zip_archive.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/data/npy.hpp"
#include "edgeattn/data/npz.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/data/registry.hpp"
#include "edgeattn/data/synthetic.hpp"
#include "support/archive_writer.hpp"
#include "support/expect_error.hpp"
#include "support/temp_dir.hpp"

namespace edgeattn::data {
namespace {

using edgeattn::testing::expect_throw_naming;
using edgeattn::testing::make_zip;
using edgeattn::testing::npy_bytes;
using edgeattn::testing::raw;
using edgeattn::testing::TempDir;

NpzOptions mapping() {
  NpzOptions o;
  o.map_features = true;
  return o;
}

const std::vector<float> kValues = {0.5f, -1.f, 2.f, 0.25f, 3.f, -0.125f, 7.f, 8.f, 1e-3f, -4.f, 6.f, 9.f};

std::string features_npy() { return npy_bytes("<f4", {4, 3}, raw(kValues)); }

void expect_values(const Features& f) {
  ASSERT_FALSE(f.is_sparse());
  ASSERT_EQ(f.rows(), 4);
  ASSERT_EQ(f.cols(), 3);
  const std::span<const float> got = f.dense().span();
  EXPECT_EQ(std::vector<float>(got.begin(), got.end()), kValues);
}

TEST(MapFeatures, ReadsAFloat32NpyInPlace) {
  const TempDir dir;
  write_file_atomic(dir / "x.npy", features_npy());
  const Features f = map_features(dir / "x.npy");
  EXPECT_TRUE(f.is_mapped());
  EXPECT_EQ(f.mapped_from(), (dir / "x.npy").string());
  expect_values(f);
}

TEST(MapFeatures, CopiesShareTheMappingAndWritesNeverReachTheFile) {
  const TempDir dir;
  write_file_atomic(dir / "x.npy", features_npy());
  Features f = map_features(dir / "x.npy");
  Features copy = f;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_TRUE(copy.is_mapped());
  EXPECT_EQ(copy.dense().data(), f.dense().data());
  Features assigned;
  assigned = f;
  EXPECT_EQ(assigned.dense().data(), f.dense().data());
  // The mapping is private: a write is seen through every copy of this process, not in the file.
  f.dense()(0, 0) = 42.f;
  EXPECT_EQ(copy.dense()(0, 0), 42.f);
  expect_values(map_features(dir / "x.npy"));
  // The mapping outlives the Features it was made for.
  const Tensor kept = copy.dense().share_reshaped({12});
  f = Features();
  copy = Features();
  EXPECT_EQ(kept.span()[1], -1.f);
  // Features that are not mapped still copy deeply.
  const Features own(Tensor({2, 2}, 1.f));
  const Features own_copy = own;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_FALSE(own_copy.is_mapped());
  EXPECT_NE(own_copy.dense().data(), own.dense().data());
}

TEST(MapFeatures, PreprocessingNeitherCopiesNorWritesMappedFeatures) {
  const TempDir dir;
  write_file_atomic(dir / "x.npy", npy_bytes("<f4", {4, 3}, raw(std::vector<float>(12, 0.f))));
  Features f = map_features(dir / "x.npy");
  // All zeros would be made sparse if read: mapped features are passed through unread.
  const Features s = sparsify_features(f);
  EXPECT_TRUE(s.is_mapped());
  EXPECT_EQ(s.dense().data(), f.dense().data());
  expect_throw_naming<InvalidArgument>([&] { normalize_features(f); },
                                       {"normalize_features", "x.npy", "in place"});
}

TEST(MapFeatures, ReadsAStoredNpzMemberByKey) {
  const TempDir dir;
  // Local header 30 + "xx.npy" 6 = 36 bytes: the data is 4-byte aligned.
  const std::string labels = npy_bytes("<i8", {4}, raw(std::vector<int64_t>{0, 1, 0, 1}));
  write_file_atomic(dir / "a.npz", make_zip({{.name = "xx.npy", .data = features_npy()},
                                             {.name = "labels.npy", .data = labels}}));
  const Features f = map_features(dir / "a.npz", "xx");
  EXPECT_EQ(f.mapped_from(), (dir / "a.npz").string() + ":xx.npy");
  expect_values(f);
  expect_throw_naming<ParseError>([&] { (void)map_features(dir / "a.npz"); },
                                  {"a.npz", "no member 'attr_matrix.npy'", "xx.npy, labels.npy"});
  expect_throw_naming<ParseError>([&] { (void)map_features(dir / "a.npz", "labels"); },
                                  {"a.npz:labels.npy", "'descr'", "'<i8'", "'<f4'"});
}

TEST(MapFeatures, WriteNpzAlignsEveryMembersDataTo64Bytes) {
  SbmConfig sc;
  sc.num_nodes = 57;  // odd sizes, so that unpadded members would start anywhere
  sc.feature_dim = 5;
  sc.num_classes = 3;
  sc.train_per_class = 4;
  sc.num_val = 10;
  sc.num_test = 10;
  const Dataset ds = sbm_dataset(sc);
  const TempDir dir;
  write_npz(ds, dir / "g.npz");
  const std::string bytes = read_file(dir / "g.npz");
  const ZipArchive zip(bytes, "g.npz");
  ASSERT_GE(zip.members().size(), 8u);
  for (const ZipMember& m : zip.members()) {
    const NpyHeader h = parse_npy_header(std::string_view(bytes).substr(m.data_offset, 4096), m.name);
    EXPECT_EQ((m.data_offset + h.data_offset) % 64, 0u) << m.name;
  }
  // The padding is transparent: everything reads back as before, and numpy's zipfile skips
  // extra-field records it does not know.
  const Dataset back = load_npz(dir / "g.npz");
  EXPECT_EQ(back.features.dense().span().size(), ds.features.dense().span().size());
  const Dataset mapped = load_npz(dir / "g.npz", mapping());
  ASSERT_TRUE(mapped.features.is_mapped());
  EXPECT_EQ(mapped.features.mapped_from(), (dir / "g.npz").string() + ":attr_matrix.npy");
  EXPECT_EQ(0, std::memcmp(mapped.features.dense().data(), ds.features.dense().data(),
                           static_cast<size_t>(ds.features.dense().numel()) * sizeof(float)));
  EXPECT_EQ(mapped.labels.classes, back.labels.classes);
  EXPECT_EQ(mapped.graph.num_edges(), back.graph.num_edges());
  const Dataset via_path = load_dataset_path(dir / "g.npz", true);
  EXPECT_TRUE(via_path.features.is_mapped());
  EXPECT_FALSE(load_dataset_path(dir / "g.npz").features.is_mapped());
}

TEST(MapFeatures, LargeMembersUseZip64AndStayAligned) {
  // force_zip64 writes the 20-byte ZIP64 record first; the padding still aligns the data.
  const std::vector<float> v(1000, 1.5f);
  const TempDir dir;
  write_npz_arrays(dir / "z.npz", std::vector<NpzMember>{{"attr_matrix", make_npy(v, {100, 10})}}, true);
  const Features f = map_features(dir / "z.npz");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.dense().data()) % 64, 0u);
  EXPECT_EQ(f.dense()(99, 9), 1.5f);
}

TEST(MapFeatures, RefusesWhatCannotBeReadInPlaceNamingFileFieldAndFix) {
  const TempDir dir;
  auto refuses = [&](const std::string& name, const std::string& bytes,
                     std::initializer_list<std::string> parts) {
    write_file_atomic(dir / name, bytes);
    try {
      (void)map_features(dir / name);
      ADD_FAILURE() << name << ": expected a ParseError";
    } catch (const ParseError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(name));
      for (const std::string& p : parts) EXPECT_THAT(e.what(), ::testing::HasSubstr(p)) << name;
    }
  };
  const std::vector<double> d(12, 1.0);
  refuses("f64.npy", npy_bytes("<f8", {4, 3}, raw(d)), {"'descr'", "'<f8'", "'<f4'", "np.save"});
  refuses("big.npy", npy_bytes(">f4", {4, 3}, raw(kValues)), {"'descr'", "'>f4'"});
  refuses("fortran.npy", npy_bytes("<f4", {4, 3}, raw(kValues), true), {"'fortran_order'", "C order"});
  refuses("flat.npy", npy_bytes("<f4", {12}, raw(kValues)), {"'shape'", "1 dimensions"});
  const std::string whole = features_npy();
  refuses("cut.npy", whole.substr(0, whole.size() - 5), {"48 bytes", "holds only 43", "truncated"});
  // np.savez puts "attr_matrix.npy" (15 bytes) after a 30-byte local header: offset 45 + the 128-byte npy
  // header.
  refuses("unaligned.npz", make_zip({{.name = "attr_matrix.npy", .data = whole}}),
          {"attr_matrix.npy", "byte offset 173", "not a multiple of 4", "np.save"});
  refuses("deflated.npz", make_zip({{.name = "xy.npy", .data = whole, .deflate = true}}), {"no member"});
  write_file_atomic(dir / "deflated2.npz",
                    make_zip({{.name = "attr_matrix.npy", .data = whole, .deflate = true}}));
  expect_throw_naming<ParseError>([&] { (void)map_features(dir / "deflated2.npz"); },
                                  {"deflated2.npz:attr_matrix.npy", "compressed", "np.savez"});
  refuses("x.npy.gz", edgeattn::testing::gzip(whole), {"gzip", "decompress"});
  refuses("text.npy", "hello, this is not numpy", {"neither an .npy file", "byte offset 0"});
  write_file_atomic(dir / "ok.npy", whole);
  expect_throw_naming<InvalidArgument>([&] { (void)map_features(dir / "ok.npy", "attr_matrix"); },
                                       {"ok.npy", "'attr_matrix'", ".npy file"});
  write_file_atomic(dir / "empty.npy", "");
  expect_throw_naming<IoError>([&] { (void)map_features(dir / "empty.npy"); }, {"empty.npy", "empty"});
  expect_throw_naming<IoError>([&] { (void)map_features(dir / "missing.npy"); },
                               {"missing.npy", "cannot open"});
  expect_throw_naming<IoError>([&] { (void)map_features(dir.path()); }, {"not a regular file"});
}

TEST(MapFeatures, PrefetchRowsChecksTheRowsAndChangesNoValue) {
  const TempDir dir;
  write_file_atomic(dir / "x.npy", features_npy());
  const Features f = map_features(dir / "x.npy");
  const std::vector<int64_t> rows = {3, 0, 3, 1};
  prefetch_rows(f, rows);
  prefetch_rows(f, {});
  expect_values(f);
  const std::vector<int64_t> bad = {1, 4};
  expect_throw_naming<InvalidArgument>([&] { prefetch_rows(f, bad); }, {"row 4", "x.npy", "[0, 4)"});
  // Features in memory: nothing to read, so nothing is checked or done.
  prefetch_rows(Features(Tensor({2, 2}, 1.f)), bad);
}

TEST(MapFeatures, LoadNpzMapsOnlyFromAFile) {
  const std::string bytes = make_zip({{.name = "attr_matrix.npy", .data = features_npy()}});
  expect_throw_naming<InvalidArgument>([&] { (void)load_npz_from_bytes(bytes, "mem.npz", mapping()); },
                                       {"mem.npz", "map_features"});
  expect_throw_naming<InvalidArgument>(
      [&] { (void)dataset_from_npz_arrays(std::map<std::string, NpyArray>{}, "arrs", mapping()); },
      {"arrs", "map_features"});
  const TempDir dir;
  write_file_atomic(dir / "edges.txt", "0 1\n1 2\n");
  expect_throw_naming<InvalidArgument>([&] { (void)load_dataset_path(dir / "edges.txt", true); },
                                       {"edges.txt", ".npz"});
}

}  // namespace
}  // namespace edgeattn::data
