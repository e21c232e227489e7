// SPDX-License-Identifier: BSD-2-Clause
// dssim's trace readers (every format, compressed or not, and their
// errors) and its workload generators (zipf, uniform, scan, loop,
// mixtures and the connection sweep).
#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <linux/dsmem_token.h>

#include "sim.hpp"

// last: it defines macros (fail) that other headers use as names
extern "C" {
#include <cmocka.h>
}

#include "sim_test_util.hpp"

namespace {

using namespace simtest;

// ---- files -------------------------------------------------------------------


std::string gzip_bytes(const std::string &bytes)
{
	std::string path = tmp_dir + "/gzip.tmp";
	gzFile gz = gzopen(path.c_str(), "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
			 bytes.size());
	assert_int_equal(gzclose(gz), Z_OK);
	std::string out = slurp(path);
	unlink(path.c_str());
	return out;
}

// with a checksum, so that any damaged byte is found
std::string zstd_bytes(const std::string &bytes)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	assert_non_null(cctx);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	std::string out(ZSTD_compressBound(bytes.size()), '\0');
	size_t n = ZSTD_compress2(cctx, out.data(), out.size(), bytes.data(), bytes.size());
	ZSTD_freeCCtx(cctx);
	assert_false(ZSTD_isError(n));
	out.resize(n);
	return out;
}

// with a CRC64, so that any damaged byte is found.  xz's default level,
// so that the stream asks the reader for the 8 MiB dictionary a trace
// packed by plain xz asks for, but with level 6's fast match finder: the
// normal one took seconds a megabyte on the test's repetitive records,
// and how the encoder finds its matches is nothing the reader sees.
std::string xz_bytes(const std::string &bytes)
{
	std::string out(lzma_stream_buffer_bound(bytes.size()), '\0');
	size_t n = 0;
	auto *in = reinterpret_cast<const uint8_t *>(bytes.data());
	auto *dst = reinterpret_cast<uint8_t *>(out.data());
	lzma_options_lzma opt;
	assert_false(lzma_lzma_preset(&opt, 6));
	opt.mode = LZMA_MODE_FAST;
	opt.mf = LZMA_MF_HC4;
	const lzma_filter filters[] = { { LZMA_FILTER_LZMA2, &opt },
					{ LZMA_VLI_UNKNOWN, nullptr } };
	assert_int_equal(lzma_stream_buffer_encode(const_cast<lzma_filter *>(filters),
						   LZMA_CHECK_CRC64, nullptr, in, bytes.size(),
						   dst, &n, out.size()),
			 LZMA_OK);
	out.resize(n);
	return out;
}

void put_le(std::string &out, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		out.push_back(static_cast<char>(v >> (8 * i)));
}

// Java's DataOutputStream order, by hand: most significant byte first
void put_be(std::string &out, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--)
		out.push_back(static_cast<char>(v >> (8 * i)));
}

std::string oracle_record(uint32_t time, uint64_t id, uint32_t size, int64_t next)
{
	std::string r;
	put_le(r, time, 4);
	put_le(r, id, 8);
	put_le(r, size, 4);
	put_le(r, static_cast<uint64_t>(next), 8);
	return r;
}

std::string dsmem_header(const char *magic = DSMEM_TRACE_MAGIC,
			 uint32_t version = DSMEM_TRACE_VERSION,
			 uint32_t rec_size = DSMEM_TRACE_REC_SIZE)
{
	std::string h(magic, 8);
	put_le(h, version, 4);
	put_le(h, rec_size, 4);
	return h;
}

std::string dsmem_record(uint64_t time_ns, uint32_t handle, uint8_t op)
{
	std::string r;
	put_le(r, time_ns, 8);
	put_le(r, handle, 4);
	put_le(r, 1, 4);	// node
	r.push_back(static_cast<char>(DSMEM_HANDLE_TYPE(handle)));
	r.push_back(static_cast<char>(op));
	r.push_back(0);		// tier
	r.push_back(0);
	put_le(r, 0, 4);
	return r;
}

// ---- reading and errors --------------------------------------------------------

dssim::trace read(const std::string &path, const dssim::read_opts &o = {})
{
	try {
		return dssim::read_trace(path, o);
	} catch (const dssim::sim_error &e) {
		fail_msg("%s", e.what());
	}
	return {};
}

std::string read_error(const std::string &path, const dssim::read_opts &o = {})
{
	return error_of([&] { dssim::read_trace(path, o); });
}

std::string gen_error(const std::string &spec)
{
	return error_of([&] { dssim::generate(spec); });
}

dssim::read_opts with_format(const char *format)
{
	dssim::read_opts o;
	o.format = format;
	return o;
}

dssim::read_opts with_csv(const char *columns)
{
	dssim::read_opts o;
	o.csv = dssim::parse_csv_map(columns);
	return o;
}

template <typename T>
void assert_vec(const std::vector<T> &got, std::initializer_list<T> want)
{
	assert_int_equal(got.size(), want.size());
	size_t i = 0;
	for (T w : want) {
		if (got[i] != w)
			fail_msg("element %zu: %lld, want %lld", i, static_cast<long long>(got[i]),
				 static_cast<long long>(w));
		i++;
	}
}

void assert_same_trace(const dssim::trace &a, const dssim::trace &b)
{
	assert_string_equal(a.format.c_str(), b.format.c_str());
	assert_true(a.ids == b.ids);
	assert_true(a.keys == b.keys);
	assert_true(a.sizes == b.sizes);
	assert_true(a.times_ns == b.times_ns);
	assert_true(a.writes == b.writes);
	assert_true(a.next == b.next);
	assert_true(a.eids == b.eids);
	assert_true(a.types == b.types);
}

uint64_t fnv1a(const std::string &s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char c : s) {
		h ^= c;
		h *= 0x100000001b3ULL;
	}
	return h;
}

// ---- compute_next ------------------------------------------------------------------

void test_compute_next(void **)
{
	dssim::trace t;
	t.ids = { 0, 1, 0, 2, 1, 0 };
	t.keys = { 10, 11, 12 };
	dssim::compute_next(t);
	assert_vec<int64_t>(t.next, { 2, 4, 5, -1, -1, -1 });
}

// ---- oracleGeneral ----------------------------------------------------------------

// libCacheSim's next-access field is the next request's logical time,
// which counts from 1
std::string small_oracle()
{
	return oracle_record(10, 500, 4096, 3) + oracle_record(10, 7, 512, -1) +
	       oracle_record(11, 500, 4096, 4) + oracle_record(12, 500, 8192, -1) +
	       oracle_record(13, 9, 1, -1);
}

void test_oracle_exact(void **)
{
	std::string path = write_file("small.oracleGeneral.bin", small_oracle());
	dssim::trace t = read(path);
	assert_string_equal(t.format.c_str(), "oracleGeneral");
	assert_string_equal(t.name.c_str(), path.c_str());
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 0, 2 });
	assert_vec<uint64_t>(t.keys, { 500, 7, 9 });
	assert_vec<uint32_t>(t.sizes, { 4096, 512, 4096, 8192, 1 });
	assert_vec<uint64_t>(t.times_ns, { 10000000000ULL, 10000000000ULL, 11000000000ULL,
					   12000000000ULL, 13000000000ULL });
	assert_vec<int64_t>(t.next, { 2, -1, 3, -1, -1 });
	assert_true(t.writes.empty());
	assert_true(t.eids.empty());
}

void test_oracle_limit(void **)
{
	std::string path = write_file("limit.oracleGeneral.bin", small_oracle());
	dssim::read_opts o;
	o.limit = 3;
	dssim::trace t = read(path, o);
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });
	// the next request of object 500 is cut off
	assert_vec<int64_t>(t.next, { 2, -1, -1 });
}

// a writer that counts from 0 would mislead Belady: the reader recomputes
void test_oracle_next_recomputed(void **)
{
	std::string bytes =
		oracle_record(1, 5, 1, 2) + oracle_record(1, 6, 1, 7) + oracle_record(1, 5, 1, -1);
	dssim::trace t = read(write_file("zero-based.oracleGeneral.bin", bytes));
	assert_vec<int64_t>(t.next, { 2, -1, -1 });
}

void test_oracle_truncated(void **)
{
	std::string path =
		write_file("cut.oracleGeneral.bin", small_oracle().substr(0, 2 * 24 + 12));
	assert_has(read_error(path),
		   { path.c_str(), "truncated record at offset 48", "(12 of 24 bytes)" });
}

// ---- dsmem ------------------------------------------------------------------------

void test_dsmem_exact(void **)
{
	const uint32_t qp5 = DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 5),
		       qp5_again = DSMEM_HANDLE(DSMEM_TOKEN_QP, 2, 5);
	const uint32_t cq2 = DSMEM_HANDLE(DSMEM_TOKEN_CQ, 1, 2),
		       mr1 = DSMEM_HANDLE(DSMEM_TOKEN_MR, 3, 1);
	const uint32_t pd0 = DSMEM_HANDLE(DSMEM_TOKEN_PD, 1, 0);
	std::string bytes = dsmem_header() + dsmem_record(100, qp5, DSMEM_TRACE_CREATE) +
			    dsmem_record(200, qp5, DSMEM_TRACE_MODIFY) +
			    dsmem_record(300, cq2, DSMEM_TRACE_READ) +
			    dsmem_record(400, mr1, DSMEM_TRACE_READ) +
			    dsmem_record(500, qp5_again, DSMEM_TRACE_WRITE) +
			    dsmem_record(600, qp5_again, DSMEM_TRACE_DESTROY) +
			    dsmem_record(700, pd0, DSMEM_TRACE_READ);
	// found by its magic whatever its name
	dssim::trace t = read(write_file("capture.bin", bytes));
	assert_string_equal(t.format.c_str(), "dsmem");
	// a new generation of QP 5 is the same object
	assert_vec<uint32_t>(t.ids, { 0, 1, 2, 0, 3 });
	assert_vec<uint64_t>(
		t.keys, { DSMEM_HANDLE(DSMEM_TOKEN_QP, 0, 5), DSMEM_HANDLE(DSMEM_TOKEN_CQ, 0, 2),
			  DSMEM_HANDLE(DSMEM_TOKEN_MR, 0, 1), DSMEM_HANDLE(DSMEM_TOKEN_PD, 0, 0) });
	assert_vec<uint32_t>(t.eids, { DSMEM_TOKEN_QP << 16 | 5, DSMEM_TOKEN_CQ << 16 | 2,
				       DSMEM_TOKEN_MR << 16 | 1, DSMEM_TOKEN_PD << 16 | 0 });
	assert_vec<uint8_t>(t.types,
			    { DSMEM_TOKEN_QP, DSMEM_TOKEN_CQ, DSMEM_TOKEN_MR, DSMEM_TOKEN_PD });
	assert_vec<uint8_t>(t.writes, { 1, 0, 0, 1, 0 });
	assert_vec<uint64_t>(t.times_ns, { 200, 300, 400, 500, 700 });
	assert_vec<uint32_t>(t.sizes,
			     { DSMEM_QP_TOKEN_SIZE, DSMEM_CQ_TOKEN_SIZE, DSMEM_MR_TOKEN_SIZE,
			       DSMEM_QP_TOKEN_SIZE, DSMEM_PD_TOKEN_SIZE });
}

// A QP's doorbell and WQE tokens are objects of their own, with their sizes:
// a post rings one and reads the other, so they weigh in L1 as a NIC's do.
void test_dsmem_doorbell_wqe(void **)
{
	const uint32_t qp3 = DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 3),
		       db3 = DSMEM_HANDLE(DSMEM_TOKEN_DB, 1, 3),
		       db3_last = DSMEM_HANDLE(DSMEM_TOKEN_DB, DSMEM_HANDLE_GEN_MASK, 3),
		       wqe3 = DSMEM_HANDLE(DSMEM_TOKEN_WQE, 1, 3);
	std::string bytes = dsmem_header() + dsmem_record(100, qp3, DSMEM_TRACE_MODIFY) +
			    dsmem_record(200, db3, DSMEM_TRACE_MODIFY) +
			    dsmem_record(300, wqe3, DSMEM_TRACE_READ) +
			    dsmem_record(400, db3_last, DSMEM_TRACE_MODIFY);
	dssim::trace t = read(write_file("post.bin", bytes));
	// index 3 of three types: three objects; the last generation is still db 3
	assert_vec<uint32_t>(t.ids, { 0, 1, 2, 1 });
	assert_vec<uint8_t>(t.types, { DSMEM_TOKEN_QP, DSMEM_TOKEN_DB, DSMEM_TOKEN_WQE });
	assert_vec<uint32_t>(t.eids, { DSMEM_TOKEN_QP << 16 | 3, DSMEM_TOKEN_DB << 16 | 3,
				       DSMEM_TOKEN_WQE << 16 | 3 });
	assert_vec<uint8_t>(t.writes, { 1, 1, 0, 1 });
	assert_vec<uint32_t>(t.sizes, { DSMEM_QP_TOKEN_SIZE, DSMEM_DB_TOKEN_SIZE,
					DSMEM_WQE_TOKEN_SIZE, DSMEM_DB_TOKEN_SIZE });
	assert_int_equal(DSMEM_DB_TOKEN_SIZE, 12);
	assert_int_equal(DSMEM_WQE_TOKEN_SIZE, 12);
}

void test_dsmem_bad_header(void **)
{
	std::string rec = dsmem_record(1, DSMEM_HANDLE(DSMEM_TOKEN_QP, 1, 1), DSMEM_TRACE_READ);
	std::string path = write_file("magic.dsm", dsmem_header("DSMTRACX") + rec);
	assert_has(read_error(path, with_format("dsmem")), { path.c_str(), "not a dsmem trace" });
	path = write_file("version.dsm", dsmem_header(DSMEM_TRACE_MAGIC, 2) + rec);
	assert_has(read_error(path), { path.c_str(), "version 2" });
	path = write_file("recsize.dsm", dsmem_header(DSMEM_TRACE_MAGIC, 1, 32) + rec);
	assert_has(read_error(path), { path.c_str(), "record size 32" });
	path = write_file("header.dsm", dsmem_header().substr(0, 10));
	assert_has(read_error(path, with_format("dsmem")),
		   { path.c_str(), "truncated dsmem header" });
	path = write_file("record.dsm", dsmem_header() + rec + rec.substr(0, 5));
	assert_has(read_error(path),
		   { path.c_str(), "truncated record at offset 40", "(5 of 24 bytes)" });
	path = write_file("none.dsm", dsmem_header() + dsmem_record(1, 1, DSMEM_TRACE_CREATE));
	assert_has(read_error(path), { path.c_str(), "no requests" });
}

// ---- text ---------------------------------------------------------------------------

void test_text_exact(void **)
{
	dssim::trace t = read(write_file("lirs.trace", "5\r\n3\n\n*\n5\n  42  \n"));
	assert_string_equal(t.format.c_str(), "text");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 2 });
	assert_vec<uint64_t>(t.keys, { 5, 3, 42 });
	assert_true(t.sizes.empty() && t.times_ns.empty() && t.writes.empty() && t.next.empty());

	dssim::read_opts o;
	o.limit = 2;
	assert_int_equal(read(write_file("limit.trace", "1\n2\n3\n"), o).size(), 2);
}

void test_text_bad_id(void **)
{
	std::string path = write_file("words.trace", "5\n6\nabc\n");
	assert_has(read_error(path), { path.c_str(), "line 3", "\"abc\"", "not a block number" });
}

// ---- csv -------------------------------------------------------------------------------

void test_csv_map(void **)
{
	dssim::csv_map m = dssim::parse_csv_map("id=2,time=1,size=3,op=4,header,sep=;");
	assert_int_equal(m.id, 2);
	assert_int_equal(m.time, 1);
	assert_int_equal(m.size, 3);
	assert_int_equal(m.op, 4);
	assert_true(m.header);
	assert_int_equal(m.sep, ';');
	m = dssim::parse_csv_map("id=3");
	assert_int_equal(m.sep, ',');
	assert_false(m.header);
	assert_int_equal(dssim::parse_csv_map("sep=,,id=1").sep, ',');
	assert_int_equal(dssim::parse_csv_map("id=1,sep=,").sep, ',');
	assert_int_equal(dssim::parse_csv_map("id=1,sep=tab").sep, '\t');
}

void test_csv_map_bad(void **)
{
	auto error = [](const char *spec) { return error_of([&] { dssim::parse_csv_map(spec); }); };
	assert_has(error("id=0"), { "id=0", "count from 1" });
	assert_has(error("id=1,foo=1"), { "unknown key \"foo\"" });
	assert_has(error("time=1"), { "id column is required" });
	assert_has(error(""), { "id column is required" });
	assert_has(error("id=1,id=2"), { "id is given twice" });
	assert_has(error("id=1,time=1"), { "id and time are both column 1" });
	assert_has(error("id"), { "id needs a value" });
	assert_has(error("id=x"), { "id=x" });
	assert_has(error("id=1,,time=2"), { "empty item" });
	assert_has(error("id=1,sep=ab"), { "sep=ab" });
}

void test_csv_exact(void **)
{
	std::string path = write_file("ops.csv", "time;obj;bytes;kind\n"
						 "100;alpha;10;r\n"
						 "200;17;20;W\n"
						 "\n"
						 "300;alpha;30;write\n"
						 "400;\"x;y\";40;0\n");
	dssim::trace t = read(path, with_csv("id=2,time=1,size=3,op=4,header,sep=;"));
	assert_string_equal(t.format.c_str(), "csv");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 2 });
	// integers are keys as they are, other ids are hashed
	assert_vec<uint64_t>(t.keys, { fnv1a("alpha"), 17, fnv1a("x;y") });
	assert_vec<uint64_t>(t.times_ns, { 100, 200, 300, 400 });
	assert_vec<uint32_t>(t.sizes, { 10, 20, 30, 40 });
	assert_vec<uint8_t>(t.writes, { 0, 1, 1, 0 });
}

void test_csv_errors(void **)
{
	std::string path = write_file("nan.csv", "1,2\n3,4\n5,abc\n");
	assert_has(read_error(path, with_csv("id=1,time=2")),
		   { path.c_str(), "line 3", "column 2 \"abc\" is not a number" });
	path = write_file("short.csv", "1,2\n3\n");
	assert_has(read_error(path, with_csv("id=1,size=2")),
		   { path.c_str(), "line 2", "has 1 column, size is column 2" });
	path = write_file("few.csv", "1,2\n");
	assert_has(read_error(path, with_csv("id=4")),
		   { "line 1", "has 2 columns, id is column 4" });
	path = write_file("op.csv", "1,x\n");
	assert_has(read_error(path, with_csv("id=1,op=2")),
		   { "line 1", "\"x\" is not an operation" });
	path = write_file("big.csv", "1,99999999999\n");
	assert_has(read_error(path, with_csv("id=1,size=2")), { "line 1", "out of range" });
	path = write_file("nomap.csv", "1,2\n");
	assert_has(read_error(path), { path.c_str(), "looks like CSV", "csv id=N" });
	assert_has(read_error(path, with_format("csv")), { path.c_str(), "csv id=N" });
}

// ---- detection, override, plain errors -------------------------------------------------

void test_detect_by_content(void **)
{
	assert_string_equal(read(write_file("numbers.dat", "1\n2\n*\n3\n")).format.c_str(), "text");
	std::string path = write_file("table.dat", "1,2,3\n4,5,6\n");
	assert_has(read_error(path), { path.c_str(), "looks like CSV" });
	// columns given: CSV whatever the name
	assert_int_equal(read(path, with_csv("id=2")).size(), 2);
	path = write_file("semicolons.dat", "a;1\nb;2\n");
	assert_has(read_error(path), { path.c_str(), "looks like CSV" });
	// prose has spaces, but not as many on every line
	path = write_file("prose.dat", "Sample traces\n\nSmall public traces for tests.\n");
	assert_has(read_error(path), { path.c_str(), "unknown trace format" });
	path = write_file("words.dat", "hello\nworld\n");
	assert_has(read_error(path), { path.c_str(), "unknown trace format",
				       "format oracleGeneral|csv|text|txt|dsmem|twitter|arc|lirs|"
				       "cache2k|scarab|cloud-physics|vscsi" });
	// a binary file without a magic number: its first bytes and the
	// formats that only `format` can name
	path = write_file("blob.dat", std::string("\x01\x02\x00\x7f binary", 12));
	assert_has(read_error(path), { path.c_str(), "unknown trace format",
				       "starting with 01 02 00 7f 20 62 69 6e", "format ",
				       "|cache2k|scarab|cloud-physics|vscsi" });
}

void test_detect_by_name(void **)
{
	// binary records have no magic: the name tells (in any case)
	assert_string_equal(read(write_file("w.ORACLEGENERAL", small_oracle())).format.c_str(),
			    "oracleGeneral");
	assert_string_equal(read(write_file("x.oracle.bin", small_oracle())).format.c_str(),
			    "oracleGeneral");
	assert_string_equal(read(write_file("y.txt", "7\n8\n")).format.c_str(), "text");
}

void test_format_override(void **)
{
	std::string path = write_file("records.trace", small_oracle());
	dssim::trace t = read(path, with_format("oracleGeneral"));
	assert_string_equal(t.format.c_str(), "oracleGeneral");
	assert_int_equal(t.size(), 5);
	// named as text, but its bytes are binary: the error asks for the
	// format rather than failing on a line
	assert_has(read_error(path), { path.c_str(), "binary", "give its format" });
	assert_has(read_error(path, with_format("bogus")), { "unknown trace format \"bogus\"" });
	assert_string_equal(
		read(write_file("ids.csv", "4\n5\n"), with_format("text")).format.c_str(), "text");
}

void test_empty_and_missing(void **)
{
	std::string path = write_file("empty.trace", "");
	assert_has(read_error(path), { path.c_str(), "no requests" });
	path = write_file("empty.dat", "");
	assert_has(read_error(path), { path.c_str(), "no requests" });
	path = write_file("stars.trace", "*\n\n*\n");
	assert_has(read_error(path), { path.c_str(), "no requests" });
	path = tmp_dir + "/not-there.trace";
	assert_has(read_error(path), { path.c_str(), "cannot open", "No such file" });
}

// ---- compression ---------------------------------------------------------------------------

// Big enough (3.6 MB of records) to cross every buffer, compressible
// enough that one chunk of input holds many chunks of output.
std::string big_oracle()
{
	const uint32_t n = 150000, objects = 5000;
	std::vector<int64_t> next(n, -1), last(objects, -1);
	for (uint32_t i = n; i-- > 0;) {
		uint32_t obj = (i * 7919u) % objects;
		next[i] = last[obj] < 0 ? -1 : last[obj] + 1;
		last[obj] = i;
	}
	std::string bytes;
	for (uint32_t i = 0; i < n; i++)
		bytes += oracle_record(i / 100, 1000 + (i * 7919u) % objects, 4096, next[i]);
	return bytes;
}

void test_compressed_same(void **)
{
	std::string oracle = big_oracle();
	dssim::trace plain = read(write_file("big.oracleGeneral.bin", oracle));
	assert_int_equal(plain.size(), 150000);
	assert_same_trace(plain, read(write_file("big.oracleGeneral.bin.gz", gzip_bytes(oracle))));
	assert_same_trace(plain, read(write_file("big.oracleGeneral.bin.zst", zstd_bytes(oracle))));
	// by magic, not by name
	assert_same_trace(plain, read(write_file("big.oracleGeneral", zstd_bytes(oracle))));

	std::string text;
	for (int i = 0; i < 300000; i++)
		text += std::to_string(i % 977) + (i % 1000 ? "\n" : "\r\n*\n");
	dssim::trace lines = read(write_file("big.trace", text));
	assert_same_trace(lines, read(write_file("big.trace.gz", gzip_bytes(text))));
	assert_same_trace(lines, read(write_file("big.trace.zstd", zstd_bytes(text))));
	// gzip -c a b: concatenated members are one stream
	std::string half = text.substr(0, text.size() / 2 + 1);	// ends inside a line
	std::string both = gzip_bytes(half) + gzip_bytes(text.substr(half.size()));
	assert_same_trace(lines, read(write_file("members.trace.gz", both)));

	// a stream that ends just as the reader's 1 MiB buffer fills
	std::string mib;
	for (int i = 0; i < 1024 * 1024 / 2; i++)
		mib += i % 2 ? "1\n" : "2\n";
	assert_int_equal(read(write_file("mib.trace.gz", gzip_bytes(mib))).size(), 1024 * 1024 / 2);
	assert_int_equal(read(write_file("mib.trace.zst", zstd_bytes(mib))).size(),
			 1024 * 1024 / 2);

	std::string capture = dsmem_header() +
			      dsmem_record(5, DSMEM_HANDLE(DSMEM_TOKEN_CQ, 1, 3), DSMEM_TRACE_READ);
	assert_int_equal(read(write_file("capture.gz", gzip_bytes(capture))).size(), 1);
}

void test_compressed_corrupt(void **)
{
	std::string oracle = big_oracle();
	std::string gz = gzip_bytes(oracle);
	std::string zst = zstd_bytes(oracle);

	std::string bad = gz;
	for (size_t i = bad.size() / 2; i < bad.size() / 2 + 16; i++)
		bad[i] = static_cast<char>(~bad[i]);
	std::string path = write_file("bad.oracleGeneral.gz", bad);
	assert_has(read_error(path), { path.c_str(), "corrupt gzip data at offset" });
	// cut short: the offset is where the file ends, not twice that
	path = write_file("cut.oracleGeneral.gz", gz.substr(0, gz.size() / 2));
	std::string at = "truncated gzip data at offset " + std::to_string(gz.size() / 2);
	assert_has(read_error(path), { path.c_str(), at.c_str() });
	path = write_file("head.oracleGeneral.gz", gz.substr(0, 10));
	assert_has(read_error(path), { path.c_str(), "truncated gzip data at offset 10" });

	bad = zst;
	for (size_t i = bad.size() / 2; i < bad.size() / 2 + 16; i++)
		bad[i] = static_cast<char>(~bad[i]);
	path = write_file("bad.oracleGeneral.zst", bad);
	assert_has(read_error(path), { path.c_str(), "corrupt zstd data at offset" });
	path = write_file("cut.oracleGeneral.zst", zst.substr(0, zst.size() / 2));
	at = "truncated zstd data at offset " + std::to_string(zst.size() / 2);
	assert_has(read_error(path), { path.c_str(), at.c_str() });
	path = write_file("head.oracleGeneral.zst", zst.substr(0, 10));
	assert_has(read_error(path), { path.c_str(), "truncated zstd data at offset 10" });
	// a record cut short inside a compressed stream: the offset is the
	// decompressed one
	path = write_file("short.oracleGeneral.zst", zstd_bytes(oracle.substr(0, 24 * 1000 + 7)));
	assert_has(read_error(path),
		   { path.c_str(), "truncated record at offset 24000", "(7 of 24 bytes)" });
}

void test_xz(void **)
{
	std::string oracle = big_oracle();
	// packed once: the damaged copies below are cut from it
	const std::string xz = xz_bytes(oracle);
	dssim::trace plain = read(write_file("xbig.oracleGeneral.bin", oracle));
	assert_same_trace(plain, read(write_file("xbig.oracleGeneral.bin.xz", xz)));
	std::string text;
	for (int i = 0; i < 300000; i++)
		text += std::to_string(i % 977) + (i % 1000 ? "\n" : "\r\n*\n");
	dssim::trace lines = read(write_file("xbig.trace", text));
	// by magic, not by name: the content then says text
	dssim::trace x = read(write_file("lines.dat", xz_bytes(text)));
	assert_same_trace(lines, x);
	// xz a; xz b; cat: concatenated streams are one trace
	std::string half = text.substr(0, text.size() / 2 + 1);
	std::string both = xz_bytes(half) + xz_bytes(text.substr(half.size()));
	assert_same_trace(lines, read(write_file("streams.trace.xz", both)));
	// a few hundred bytes that expand past several 1 MiB buffers: output
	// still comes after the input has ended
	std::string sevens;
	for (int i = 0; i < 4 * 1024 * 1024 / 2; i++)
		sevens += "7\n";
	std::string packed = xz_bytes(sevens);
	assert_true(packed.size() < 4096);
	assert_int_equal(read(write_file("sevens.trace.xz", packed)).size(), 2 * 1024 * 1024);

	std::string path = write_file("cut.oracleGeneral.xz", xz.substr(0, xz.size() / 2));
	std::string at = "truncated xz data at offset " + std::to_string(xz.size() / 2);
	assert_has(read_error(path), { path.c_str(), at.c_str() });
	std::string bad = xz;
	for (size_t i = bad.size() / 2; i < bad.size() / 2 + 16; i++)
		bad[i] = static_cast<char>(~bad[i]);
	path = write_file("bad.oracleGeneral.xz", bad);
	assert_has(read_error(path), { path.c_str(), "corrupt xz data at offset" });
	path = write_file("short.oracleGeneral.xz", xz_bytes(oracle.substr(0, 24 * 10 + 5)));
	assert_has(read_error(path),
		   { path.c_str(), "truncated record at offset 240", "(5 of 24 bytes)" });
}

// compressions the stream cannot undo are named, format given or not
void test_unsupported_compression(void **)
{
	const std::pair<const char *, std::string> cases[] = {
		{ "bzip2-compressed", std::string("BZh91AY&SY\x01\x02", 12) },
		{ "lz4-compressed", std::string("\x04\x22\x4d\x18\x64\x40\xa7", 7) },
		{ "a zip archive", std::string("PK\x03\x04\x14\x00\x00\x00", 8) },
	};
	for (const auto &[name, bytes] : cases) {
		std::string path = write_file("packed.trace", bytes);
		assert_has(read_error(path), { path.c_str(), name, "gzip, zstd or xz" });
	}
	// (with the format given, the bytes are that format's: test_scarab)
	// "BZh" not followed by a block size is not bzip2
	std::string path = write_file("bzh.dat", "BZh\nBZh\n");
	assert_has(read_error(path), { path.c_str(), "unknown trace format (give one" });
}

// ---- libCacheSim's csv and txt ------------------------------------------------------------

void test_libcachesim_csv_map(void **)
{
	dssim::csv_map m = dssim::parse_csv_map(
		"time-col=2, obj-id-col=5, obj-size-col=4, obj-id-is-num=true");
	assert_int_equal(m.id, 5);
	assert_int_equal(m.time, 2);
	assert_int_equal(m.size, 4);
	assert_int_equal(m.op, 0);
	assert_false(m.header);
	m = dssim::parse_csv_map(
		"obj-id-col=2,op-col=3,delimiter=;,has-header=true,obj-id-is-num=0");
	assert_int_equal(m.id, 2);
	assert_int_equal(m.op, 3);
	assert_int_equal(m.sep, ';');
	assert_true(m.header);
	assert_false(dssim::parse_csv_map("obj-id-col=1,has-header=false").header);
	auto error = [](const char *spec) { return error_of([&] { dssim::parse_csv_map(spec); }); };
	assert_has(error("obj-id-col=1,has-header=maybe"), { "has-header=maybe" });
	assert_has(error("obj-id-col=1,ttl-col=3"), { "unknown key \"ttl-col\"", "obj-id-col" });
	assert_has(error("obj-id-col=1,id=2"), { "id is given twice" });

	std::string path = write_file("lcs.csv", "t,size,id\n"
						 "7,100,a\n"
						 "8,200,42\n"
						 "9,300,a\n");
	dssim::trace t = read(path, with_csv("time-col=1, obj-size-col=2, obj-id-col=3, "
					      "has-header=true"));
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });
	assert_vec<uint64_t>(t.keys, { fnv1a("a"), 42 });
	assert_vec<uint32_t>(t.sizes, { 100, 200, 300 });
	assert_vec<uint64_t>(t.times_ns, { 7, 8, 9 });
}

void test_txt(void **)
{
	std::string path = write_file("ids.txt", "17\nobj-a\n17\n\nobj-b\nobj-a\n");
	dssim::trace t = read(path, with_format("txt"));
	assert_string_equal(t.format.c_str(), "txt");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 2, 1 });
	assert_vec<uint64_t>(t.keys, { 17, fnv1a("obj-a"), fnv1a("obj-b") });
	assert_true(t.sizes.empty() && t.times_ns.empty() && t.writes.empty());
	// text takes numbers only
	assert_has(read_error(path), { path.c_str(), "line 2", "\"obj-a\"", "not a block number" });
	path = write_file("blank.txt", "\n\n");
	assert_has(read_error(path, with_format("txt")), { path.c_str(), "no requests" });
}

// ---- twitter/cache-trace ------------------------------------------------------------------

void test_twitter(void **)
{
	// by its content: no suffix says twitter
	std::string path = write_file("cluster52.sort",
				      "0,key-A,10,90,1,get,0\n"
				      "0,key-B,5,0,2,gets,0\n"
				      "1,key-A,10,100,1,set,3600\n"
				      "1,key-C,6,20,1,delete,0\n"
				      "2,key-B,5,7,3,cas,0\n"
				      "\n"
				      "3,key-D,6,1,3,incr,0\n"
				      "4,key-A,10,100,1,append,0\n");
	dssim::trace t = read(path);
	assert_string_equal(t.format.c_str(), "twitter");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 1, 2, 0 });
	assert_vec<uint64_t>(t.keys, { fnv1a("key-A"), fnv1a("key-B"), fnv1a("key-D") });
	assert_vec<uint32_t>(t.sizes, { 100, 5, 110, 12, 7, 110 });
	assert_vec<uint8_t>(t.writes, { 0, 0, 1, 1, 1, 1 });
	assert_vec<uint64_t>(t.times_ns, { 0, 0, 1000000000ULL, 2000000000ULL, 3000000000ULL,
					   4000000000ULL });
	assert_true(t.next.empty());
	dssim::read_opts o = with_format("twitter");
	o.limit = 2;
	assert_int_equal(read(path, o).size(), 2);
}

void test_twitter_malformed(void **)
{
	std::string path = write_file("cut.twitter", "0,k,1,2,1,get,0\n1,k,1,2,1\n");
	assert_has(read_error(path, with_format("twitter")),
		   { path.c_str(), "line 2", "has 5 fields", "a Twitter record has 7" });
	path = write_file("op.twitter", "0,k,1,2,1,get,0\n1,k,1,2,1,fetch,0\n");
	assert_has(read_error(path, with_format("twitter")),
		   { path.c_str(), "line 2", "operation \"fetch\"" });
	path = write_file("size.twitter", "0,k,1,x2,1,get,0\n");
	assert_has(read_error(path, with_format("twitter")),
		   { path.c_str(), "line 1", "value size (field 4) \"x2\" is not a number" });
	path = write_file("deletes.twitter", "0,k,1,2,1,delete,0\n");
	assert_has(read_error(path, with_format("twitter")), { path.c_str(), "no requests" });
	// two sizes whose sum would wrap to a small one
	path = write_file("wrap.twitter", "0,k,18446744073709551615,2,1,get,0\n");
	assert_has(read_error(path, with_format("twitter")),
		   { path.c_str(), "line 1", "key size 18446744073709551615", "out of range" });
}

// ---- Caffeine's formats --------------------------------------------------------------------

void test_arc(void **)
{
	// found by the ARC traces' suffix
	std::string path = write_file("P9.lis", "0 3 0 0\n10 1 0 1\n\n1 2 0 2\n7 0 0 3\n");
	dssim::trace t = read(path);
	assert_string_equal(t.format.c_str(), "arc");
	assert_vec<uint32_t>(t.ids, { 0, 1, 2, 3, 1, 2 });
	assert_vec<uint64_t>(t.keys, { 0, 1, 2, 10 });
	assert_true(t.sizes.empty() && t.writes.empty());
	// a limit stops inside a run of blocks
	dssim::read_opts o;
	o.limit = 2;
	assert_vec<uint32_t>(read(path, o).ids, { 0, 1 });
}

void test_arc_malformed(void **)
{
	std::string path = write_file("cut.lis", "0 3 0 0\n5\n");
	assert_has(read_error(path),
		   { path.c_str(), "line 2", "\"5\" is not an ARC record", "start_block" });
	path = write_file("nan.lis", "0 x 0 0\n");
	assert_has(read_error(path), { path.c_str(), "line 1", "block count \"x\"" });
	// one line must not expand to billions of requests
	path = write_file("huge.lis", "0 4000000000 0 0\n");
	assert_has(read_error(path), { path.c_str(), "line 1", "block count 4000000000",
				       "out of range" });
}

void test_lirs_name(void **)
{
	dssim::trace t = read(write_file("loop.dat", "3\n*\n4\n3\n"), with_format("LIRS"));
	assert_string_equal(t.format.c_str(), "text");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });
	assert_vec<uint64_t>(t.keys, { 3, 4 });
}

std::string be_keys(std::initializer_list<uint64_t> keys, int width)
{
	std::string out;
	for (uint64_t k : keys)
		put_be(out, k, width);
	return out;
}

void test_cache2k_cloud_physics(void **)
{
	std::string bytes = be_keys({ 5, 0xffffffff, 5, 0x01020304 }, 4);
	assert_int_equal(bytes.size(), 16);
	assert_int_equal(bytes[3], 5);		// big-endian: the low byte last
	std::string path = write_file("orm-busy.trace", bytes);
	// cache2k: a Java int, sign-extended
	dssim::trace t = read(path, with_format("cache2k"));
	assert_string_equal(t.format.c_str(), "cache2k");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 2 });
	assert_vec<uint64_t>(t.keys, { 5, 0xffffffffffffffffULL, 0x01020304 });
	assert_true(t.sizes.empty() && t.times_ns.empty() && t.writes.empty());
	// cloud-physics: unsigned
	t = read(path, with_format("cloud-physics"));
	assert_string_equal(t.format.c_str(), "cloud-physics");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0, 2 });
	assert_vec<uint64_t>(t.keys, { 5, 0xffffffffULL, 0x01020304 });
	dssim::read_opts o = with_format("cache2k");
	o.limit = 3;
	assert_int_equal(read(path, o).size(), 3);
	// as Caffeine ships them: .trace.xz
	t = read(write_file("web07.trace.xz", xz_bytes(bytes)), with_format("cloud-physics"));
	assert_vec<uint64_t>(t.keys, { 5, 0xffffffffULL, 0x01020304 });

	path = write_file("cut.cache2k", bytes.substr(0, 11));
	for (const char *format : { "cache2k", "cloud-physics" })
		assert_has(read_error(path, with_format(format)),
			   { path.c_str(), "truncated record at offset 8", "(3 of 4 bytes)" });
}

void test_scarab(void **)
{
	std::string bytes = be_keys({ 0x0102030405060708ULL, 7, 0x0102030405060708ULL }, 8);
	assert_int_equal(bytes.size(), 24);
	assert_int_equal(bytes[0], 1);
	assert_int_equal(bytes[15], 7);
	dssim::trace t = read(write_file("recs.trace", bytes), with_format("scarab"));
	assert_string_equal(t.format.c_str(), "scarab");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });
	assert_vec<uint64_t>(t.keys, { 0x0102030405060708ULL, 7 });
	t = read(write_file("recs.trace.xz", xz_bytes(bytes)), with_format("scarab"));
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });

	std::string path = write_file("cut.scarab", bytes.substr(0, 13));
	assert_has(read_error(path, with_format("scarab")),
		   { path.c_str(), "truncated record at offset 8", "(5 of 8 bytes)" });

	// a key that starts as bzip2 does: read, the format being given
	std::string bz = be_keys({ 0x425a683100000001ULL, 9 }, 8);
	assert_true(bz.compare(0, 4, "BZh1") == 0);
	t = read(write_file("bz.scarab", bz), with_format("scarab"));
	assert_vec<uint64_t>(t.keys, { 0x425a683100000001ULL, 9 });
	// Caffeine names its binary traces *.trace: the bytes say binary,
	// and the error asks for the format rather than failing on line 1
	path = write_file("web07.trace", bytes);
	assert_has(read_error(path), { path.c_str(), "binary", "give its format" });
}

// ---- vscsi -----------------------------------------------------------------------------

// libCacheSim's vscsi layouts, field by field (little-endian):
// V1 (32 bytes): sn, len, nSG (u32), cmd, ver (u16), lbn, ts (u64)
std::string vscsi1_record(uint64_t lbn, uint32_t len, uint16_t cmd, uint64_t ts_us,
			  uint32_t sn = 0x11223344, uint32_t nsg = 3, uint16_t ver = 0x0100)
{
	std::string r;
	put_le(r, sn, 4);
	put_le(r, len, 4);
	put_le(r, nsg, 4);
	put_le(r, cmd, 2);
	put_le(r, ver, 2);
	put_le(r, lbn, 8);
	put_le(r, ts_us, 8);
	assert_int_equal(r.size(), 32);
	return r;
}

// V2 (40 bytes): cmd, ver (u16), sn, len, nSG (u32), lbn, ts, rt (u64)
std::string vscsi2_record(uint64_t lbn, uint32_t len, uint16_t cmd, uint64_t ts_us,
			  uint64_t rt = 777, uint16_t ver = 0x0200)
{
	std::string r;
	put_le(r, cmd, 2);
	put_le(r, ver, 2);
	put_le(r, 0x55667788, 4);	// sn
	put_le(r, len, 4);
	put_le(r, 9, 4);		// nSG
	put_le(r, lbn, 8);
	put_le(r, ts_us, 8);
	put_le(r, rt, 8);
	assert_int_equal(r.size(), 40);
	return r;
}

// three requests, two objects: READ(10), WRITE(10), READ(16)
std::string vscsi1_bytes()
{
	return vscsi1_record(1000, 4096, 0x28, 1500000) +
	       vscsi1_record(0x0102030405060708ULL, 512, 0x2a, 2000001) +
	       vscsi1_record(1000, 8192, 0x88, 3000000);
}

std::string vscsi2_bytes()
{
	return vscsi2_record(1000, 4096, 0x28, 1500000) +
	       vscsi2_record(0x0102030405060708ULL, 512, 0x8a, 2000001) +
	       vscsi2_record(1000, 8192, 0x08, 3000000);
}

void assert_vscsi_requests(const dssim::trace &t)
{
	assert_string_equal(t.format.c_str(), "vscsi");
	assert_vec<uint32_t>(t.ids, { 0, 1, 0 });
	assert_vec<uint64_t>(t.keys, { 1000, 0x0102030405060708ULL });	// lbn
	assert_vec<uint32_t>(t.sizes, { 4096, 512, 8192 });		// len, bytes
	// ts in microseconds, kept whole
	assert_vec<uint64_t>(t.times_ns, { 1500000000ULL, 2000001000ULL, 3000000000ULL });
	assert_vec<uint8_t>(t.writes, { 0, 1, 0 });
}

void test_vscsi_v1(void **)
{
	std::string bytes = vscsi1_bytes();
	assert_int_equal(bytes.size(), 96);
	assert_int_equal(bytes[15], 1);		// ver's high byte
	assert_int_equal(bytes[16], static_cast<char>(0xe8));	// lbn 1000, low byte first
	assert_vscsi_requests(read(write_file("v1.bin", bytes), with_format("vscsi")));
	assert_vscsi_requests(read(write_file("v1.bin", bytes), with_format("VSCSI")));
	// libCacheSim's traces are named so: no format needed
	assert_vscsi_requests(read(write_file("w01_vscsi1.vscsitrace", bytes)));

	dssim::read_opts o = with_format("vscsi");
	o.limit = 2;
	o.want_times = false;
	dssim::trace t = read(write_file("v1.bin", bytes), o);
	assert_vec<uint32_t>(t.ids, { 0, 1 });
	assert_vec<uint32_t>(t.sizes, { 4096, 512 });
	assert_true(t.times_ns.empty());
	// one record: judged by it alone
	t = read(write_file("one.bin", bytes.substr(0, 32)), with_format("vscsi"));
	assert_vec<uint64_t>(t.keys, { 1000 });
	assert_vec<uint32_t>(t.sizes, { 4096 });
}

void test_vscsi_v2(void **)
{
	std::string bytes = vscsi2_bytes();
	assert_int_equal(bytes.size(), 120);
	assert_int_equal(bytes[3], 2);		// ver's high byte
	assert_int_equal(bytes[43], 2);
	assert_vscsi_requests(read(write_file("v2.bin", bytes), with_format("vscsi")));
	assert_vscsi_requests(read(write_file("w36_vscsi2.vscsitrace", bytes)));
	dssim::trace t = read(write_file("one.bin", bytes.substr(0, 40)), with_format("vscsi"));
	assert_vec<uint64_t>(t.keys, { 1000 });
	assert_vec<uint64_t>(t.times_ns, { 1500000000ULL });

	// compressed, as the traces are shipped; by name, after xz
	assert_vscsi_requests(read(write_file("v2.bin.xz", xz_bytes(bytes)), with_format("vscsi")));
	assert_vscsi_requests(read(write_file("w36_vscsi2.vscsitrace.xz", xz_bytes(bytes))));
	assert_vscsi_requests(
		read(write_file("w01_vscsi1.vscsitrace.xz", xz_bytes(vscsi1_bytes()))));
}

void test_vscsi_version_detection(void **)
{
	// V2 is tried first, as libCacheSim does: 160 bytes of V1 records
	// whose bytes 3 and 43 are 2 are four V2 records, though bytes 15
	// and 47 say V1 (only the first two records' are looked at)
	std::string v1;
	for (int i = 0; i < 5; i++)
		v1 += vscsi1_record(100 + i, 4096, 0x28, 1000000 * i, i == 0 ? 0x02000000 : 1,
				    i == 1 ? 0x02000000 : 3, i < 2 ? 0x0100 : 0);
	assert_int_equal(v1[3], 2);
	assert_int_equal(v1[43], 2);
	assert_int_equal(v1[15], 1);
	assert_int_equal(v1[47], 1);
	dssim::trace t = read(write_file("both.bin", v1), with_format("vscsi"));
	assert_int_equal(t.size(), 4);
	// V2's lbn at offsets 16, 56, 96, 136: V1's lbn, ts, sn+len, nSG+cmd+ver
	assert_vec<uint64_t>(t.keys, { 100, 1000000, 1 | 4096ULL << 32, 3 | 0x28ULL << 32 });
	// one of the two alone is not enough: V1
	v1.replace(32, 32, vscsi1_record(101, 4096, 0x28, 1000000));
	t = read(write_file("both.bin", v1), with_format("vscsi"));
	assert_int_equal(t.size(), 5);
	assert_vec<uint64_t>(t.keys, { 100, 101, 102, 103, 104 });

	// no version: neither 2 at offsets 3, 43 nor 1 at 15, 47
	std::string nover = vscsi1_record(1, 512, 0x28, 0, 1, 3, 0x0300) +
			    vscsi1_record(2, 512, 0x28, 0, 1, 3, 0x0300);
	std::string path = write_file("nover.bin", nover);
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi: unknown record version", "version byte 0x00 read as V2",
		     "0x03, 0x03 read as V1" });
	// the first record V1, the second not: unknown, as in libCacheSim
	path = write_file("mixed.bin", vscsi1_record(1, 512, 0x28, 0) +
					       vscsi1_record(2, 512, 0x28, 0, 1, 3, 0x0200));
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "unknown record version", "0x01, 0x02 read as V1" });

	// unnamed and without a format: the binary hint says vscsi
	path = write_file("blob1.dat", vscsi1_bytes());
	assert_has(read_error(path), { path.c_str(), "unknown trace format",
				       "look like vscsi V1", "|cloud-physics|vscsi" });
	path = write_file("blob2.dat", vscsi2_bytes());
	assert_has(read_error(path), { path.c_str(), "look like vscsi V2" });
}

void test_vscsi_malformed(void **)
{
	std::string path = write_file("empty.vscsitrace", "");
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi: empty", "32-byte V1 or 40-byte V2" });
	path = write_file("short.bin", vscsi1_bytes().substr(0, 20));
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi: truncated record at offset 0 (20 bytes" });

	// not a whole number of records of the version the first ones give
	path = write_file("v1cut.bin", vscsi1_bytes() + "0123456789");
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi: 106 bytes are not a whole number of 32-byte V1 records",
		     "10 bytes left over" });
	path = write_file("v2cut.bin", vscsi2_bytes().substr(0, 100));
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi: 100 bytes are not a whole number of 40-byte V2 records",
		     "20 bytes left over" });
	// compressed: the size is known only at the end
	path = write_file("v1cut.bin.xz", xz_bytes(vscsi1_bytes() + "0123456789"));
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi V1: truncated record at offset 96 (10 of 32 bytes)" });
	path = write_file("v2cut.vscsitrace.xz", xz_bytes(vscsi2_bytes().substr(0, 100)));
	assert_has(read_error(path),
		   { path.c_str(), "vscsi V2: truncated record at offset 80 (20 of 40 bytes)" });

	// a time in nanoseconds that would not fit
	path = write_file("late.bin", vscsi1_record(1, 512, 0x28, 0) +
					      vscsi1_record(2, 512, 0x28, 0xffffffffffffffffULL));
	assert_has(read_error(path, with_format("vscsi")),
		   { path.c_str(), "vscsi V1: timestamp 18446744073709551615 us is out of range",
		     "record at offset 32" });
}

// ---- the sample traces --------------------------------------------------------------------

bool have_samples()
{
	struct stat st;
	return stat(DS_TRACES, &st) == 0 && S_ISDIR(st.st_mode);
}

void test_sample_cloudphysics(void **)
{
	if (!have_samples())
		skip();
	std::string path = std::string(DS_TRACES) + "/cloudPhysicsIO.oracleGeneral.bin";
	dssim::trace t = read(path);
	assert_int_equal(t.size(), 113872);
	assert_int_equal(t.nobjects(), 48974);
	dssim::trace computed = t;
	dssim::compute_next(computed);
	assert_true(t.next == computed.next);

	// the file's own field is the next index + 1 (libCacheSim's logical
	// time counts from 1), so the reader took it rather than recomputing
	FILE *f = fopen(path.c_str(), "rb");
	assert_non_null(f);
	unsigned char rec[24];
	for (size_t i = 0; i < 1000; i++) {
		assert_int_equal(fread(rec, 1, sizeof(rec), f), sizeof(rec));
		int64_t field = 0;
		for (int b = 7; b >= 0; b--)
			field = static_cast<int64_t>(static_cast<uint64_t>(field) << 8 |
						     rec[16 + b]);
		assert_int_equal(field, computed.next[i] < 0 ? -1 : computed.next[i] + 1);
	}
	fclose(f);
}

void test_sample_lirs(void **)
{
	if (!have_samples())
		skip();
	dssim::trace loop = read(std::string(DS_TRACES) + "/lirs-loop.trace.gz");
	assert_string_equal(loop.format.c_str(), "text");
	assert_int_equal(loop.size(), 505500);
	// two "*" checkpoints among 100,002 lines
	assert_int_equal(read(std::string(DS_TRACES) + "/lirs-2_pools.trace.gz").size(), 100000);
}

// ---- generators -----------------------------------------------------------------------------

void test_gen_deterministic(void **)
{
	const char *spec = "zipf:requests=50k,objects=1000,seed=7";
	dssim::trace a = gen(spec), b = gen(spec);
	assert_string_equal(a.name.c_str(), spec);
	assert_string_equal(a.format.c_str(), "gen");
	assert_same_trace(a, b);
	assert_false(a.ids == gen("zipf:requests=50k,objects=1000,seed=8").ids);
	// write=0 draws nothing: the same trace as without it
	assert_true(a.ids == gen("zipf:requests=50k,objects=1000,seed=7,write=0").ids);
}

void test_gen_counts(void **)
{
	dssim::trace t = gen("uniform:requests=20k,objects=100");
	assert_int_equal(t.size(), 20000);
	assert_int_equal(t.nobjects(), 100);
	assert_true(t.sizes.empty() && t.writes.empty() && t.times_ns.empty() && t.next.empty());

	t = gen("zipf:requests=1e4,objects=50,write=0.25,size=4096");
	assert_int_equal(t.size(), 10000);
	assert_true(t.nobjects() <= 50);
	size_t writes = std::count(t.writes.begin(), t.writes.end(), 1);
	assert_in_range(writes, 2200, 2800);
	assert_true(
		std::all_of(t.sizes.begin(), t.sizes.end(), [](uint32_t s) { return s == 4096; }));

	assert_int_equal(gen("uniform:requests=1.5k,objects=10").size(), 1500);
	assert_int_equal(gen("uniform:requests=2e3,objects=10").size(), 2000);
	assert_int_equal(gen("uniform:objects=10").size(), 1000000);	// the default
}

void test_gen_loop_scan(void **)
{
	dssim::trace t = gen("loop:requests=25,objects=10");
	assert_int_equal(t.nobjects(), 10);
	for (size_t i = 0; i < t.size(); i++)
		assert_int_equal(t.ids[i], i % 10);
	for (uint32_t o = 0; o < 10; o++)
		assert_int_equal(t.keys[o], o);
	// a scan never comes back to an object
	t = gen("scan:requests=25,objects=10");
	assert_int_equal(t.nobjects(), 25);
	for (size_t i = 0; i < t.size(); i++)
		assert_int_equal(t.ids[i], i);
}

// sum of k^-alpha for k = 1..n
double harmonic(uint64_t n, double alpha)
{
	double h = 0;
	for (uint64_t k = n; k >= 1; k--)
		h += std::pow(static_cast<double>(k), -alpha);
	return h;
}

// the request counts of the most requested objects, most first
std::vector<size_t> top_counts(const dssim::trace &t, size_t how_many)
{
	std::vector<size_t> counts(t.nobjects());
	for (uint32_t id : t.ids)
		counts[id]++;
	std::sort(counts.rbegin(), counts.rend());
	counts.resize(how_many);
	return counts;
}

// Ranks 1..5 (the most requested objects) against k^-alpha / H(n,
// alpha); the tolerance is tens of standard deviations, and the seed is
// fixed anyway.
void check_zipf(uint64_t objects, double alpha, const char *spec)
{
	const size_t requests = 1000000;
	dssim::trace t = gen(spec);
	assert_int_equal(t.size(), requests);
	std::vector<size_t> top = top_counts(t, 5);
	double h = harmonic(objects, alpha);
	for (size_t r = 0; r < 5; r++) {
		double want = std::pow(static_cast<double>(r + 1), -alpha) / h;
		double got = static_cast<double>(top[r]) / requests;
		if (std::fabs(got - want) > 0.004)
			fail_msg("%s: rank %zu has %.5f of the requests, want %.5f", spec, r + 1,
				 got, want);
	}
	// the popular objects are scattered over the keys
	std::vector<size_t> counts(t.nobjects());
	for (uint32_t id : t.ids)
		counts[id]++;
	uint32_t top_id = static_cast<uint32_t>(std::max_element(counts.begin(), counts.end()) -
						counts.begin());
	assert_true(t.keys[top_id] != 0);
}

void test_gen_zipf_head(void **)
{
	check_zipf(1000, 1.0, "zipf:requests=1m,objects=1000,seed=11");
	check_zipf(1000, 0.7, "zipf:requests=1m,objects=1000,alpha=0.7,seed=12");
	check_zipf(1000, 1.3, "zipf:requests=1m,objects=1000,alpha=1.3,seed=13");
}

// Populations past the sampler's table: the tail comes from rejection
// inversion; the distinct objects seen must match the law too.
void test_gen_zipf_tail(void **)
{
	const uint64_t n = 300000;
	const double alpha = 0.9;
	check_zipf(n, alpha, "zipf:requests=1m,objects=300k,alpha=0.9,seed=14");
	dssim::trace t = gen("zipf:requests=1m,objects=300k,alpha=0.9,seed=14");
	double h = harmonic(n, alpha), expected = 0;
	for (uint64_t k = 1; k <= n; k++)
		expected += 1 - std::pow(1 - std::pow(static_cast<double>(k), -alpha) / h, 1e6);
	double got = t.nobjects();
	if (std::fabs(got - expected) > 0.01 * expected)
		fail_msg("%.0f distinct objects, want %.0f", got, expected);
}

void test_gen_mixture(void **)
{
	dssim::trace t = gen("zipf:objects=100,weight=3+uniform:objects=100,requests=100k,seed=5");
	assert_int_equal(t.size(), 100000);
	size_t first = 0;
	for (uint32_t id : t.ids) {
		uint64_t component = t.keys[id] >> 40;
		assert_true(component <= 1);
		first += component == 0;
	}
	assert_in_range(first, 74000, 76000);
	assert_true(t.nobjects() <= 200);
	// weights whose sum overflows are still relative (all went to the last)
	t = gen("uniform:objects=100,weight=1e308+uniform:objects=100,weight=1e308,requests=10k");
	first = 0;
	for (uint32_t id : t.ids)
		first += (t.keys[id] >> 40) == 0;
	assert_in_range(first, 4500, 5500);
	// "1e+5" is a number, not a second component
	assert_int_equal(gen("uniform:requests=1e+5,objects=10+loop:objects=5").size(), 100000);
	// a write fraction on one component only
	t = gen("loop:objects=10,write=1+scan:requests=1000,seed=2");
	for (size_t i = 0; i < t.size(); i++)
		assert_int_equal(t.writes[i], (t.keys[t.ids[i]] >> 40) == 0);
}

void test_gen_bad_specs(void **)
{
	assert_has(gen_error(""), { "unknown kind \"\"" });
	assert_has(gen_error("zipfx"), { "unknown kind \"zipfx\"" });
	assert_has(gen_error("zipf:alpha=0"), { "alpha=0", "more than 0" });
	assert_has(gen_error("zipf:alpha=-1"), { "alpha=-1" });
	assert_has(gen_error("zipf:foo=1"), { "unknown key \"foo\"" });
	assert_has(gen_error("zipf:objects=abc"), { "objects=\"abc\" is not a number" });
	assert_has(gen_error("zipf:objects=0"), { "objects=0 is out of range" });
	assert_has(gen_error("zipf:requests=1.5"), { "requests=1.5 is not a whole number" });
	assert_has(gen_error("zipf:requests=10x"), { "requests=\"10x\"" });
	assert_has(gen_error("uniform:alpha=1"), { "alpha is for zipf only" });
	assert_has(gen_error("zipf:write=2"), { "write=2 is not between 0 and 1" });
	assert_has(gen_error("zipf:objects"), { "\"objects\" is not KEY=VALUE" });
	assert_has(gen_error("zipf:objects=10,"), { "an empty KEY=VALUE" });
	assert_has(gen_error("zipf:size=0"), { "size=0" });
	assert_has(gen_error("zipf:requests=10+uniform:requests=20"),
		   { "requests is given twice" });
	assert_has(gen_error("sweep:qps=4+zipf"), { "cannot be mixed" });
}

// ---- the connection sweep ---------------------------------------------------------------

void test_sweep_parse(void **)
{
	dssim::sweep_spec s;
	assert_true(dssim::parse_sweep("sweep:qps=16..4096,ops=1m,reuse=0.2,payload=64,seed=3", s));
	assert_vec<uint32_t>(s.qps, { 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 });
	assert_int_equal(s.ops, 1000000);
	assert_true(s.reuse == 0.2);
	assert_int_equal(s.payload, 64);
	assert_int_equal(s.seed, 3);
	assert_int_equal(s.qp_per_cq, 4);
	assert_int_equal(s.qp_per_mr, 8);
	assert_true(dssim::parse_sweep("sweep:qps=16..5000,qp_per_cq=2,qp_per_mr=16", s));
	assert_vec<uint32_t>(s.qps, { 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 5000 });
	assert_int_equal(s.qp_per_cq, 2);
	assert_int_equal(s.qp_per_mr, 16);
	assert_true(dssim::parse_sweep("sweep:qps=100|450|3000", s));
	assert_vec<uint32_t>(s.qps, { 100, 450, 3000 });
	// a list in any order is swept (and its knee found) in rising order
	assert_true(dssim::parse_sweep("sweep:qps=3000|100|450|100", s));
	assert_vec<uint32_t>(s.qps, { 100, 450, 3000 });
	assert_true(dssim::parse_sweep("sweep:qps=65536", s));
	assert_vec<uint32_t>(s.qps, { 65536 });
	assert_false(dssim::parse_sweep("zipf:objects=5", s));
	assert_false(dssim::parse_sweep("sweeping", s));

	auto error = [](const char *spec) {
		return error_of([&] {
			dssim::sweep_spec out;
			dssim::parse_sweep(spec, out);
		});
	};
	assert_has(error("sweep:qps=0"), { "qps=0 is out of range" });
	assert_has(error("sweep:qps=70000"), { "qps=70000 is out of range" });
	assert_has(error("sweep:qps=64..16"), { "runs backwards" });
	assert_has(error("sweep:qps=4|x"), { "qps=\"x\"" });
	assert_has(error("sweep:ops=5"), { "qps is required" });
	assert_has(error("sweep:qps=4,foo=1"), { "unknown key \"foo\"" });
	assert_has(error("sweep:qps=4,reuse=1.5"), { "reuse=1.5" });
	assert_has(error("sweep:qps=4,qp_per_cq=0"), { "qp_per_cq=0" });
	assert_has(gen_error("sweep:qps=16|32"), { "2 counts", "sweep run" });
}

void test_sweep_structure(void **)
{
	dssim::trace t = gen("sweep:qps=64,ops=1000,seed=3");
	assert_string_equal(t.format.c_str(), "gen");
	assert_int_equal(t.size(), 3000);
	assert_true(t.times_ns.empty());
	std::set<uint32_t> qps;
	for (size_t op = 0; op < 1000; op++) {
		uint32_t qp = t.ids[3 * op], cq = t.ids[3 * op + 1], mr = t.ids[3 * op + 2];
		assert_int_equal(t.types[qp], DSMEM_TOKEN_QP);
		assert_int_equal(t.types[cq], DSMEM_TOKEN_CQ);
		assert_int_equal(t.types[mr], DSMEM_TOKEN_MR);
		uint32_t index = t.eids[qp] & 0xffff;
		assert_true(index < 64);
		assert_int_equal(t.eids[qp], DSMEM_TOKEN_QP << 16 | index);
		assert_int_equal(t.eids[cq], DSMEM_TOKEN_CQ << 16 | index / 4);
		assert_int_equal(t.eids[mr], DSMEM_TOKEN_MR << 16 | index / 8);
		assert_int_equal(t.keys[qp], DSMEM_HANDLE(DSMEM_TOKEN_QP, 0, index));
		assert_vec<uint8_t>({ t.writes.begin() + 3 * op, t.writes.begin() + 3 * op + 3 },
				    { 1, 0, 0 });
		assert_vec<uint32_t>(
			{ t.sizes.begin() + 3 * op, t.sizes.begin() + 3 * op + 3 },
			{ DSMEM_QP_TOKEN_SIZE, DSMEM_CQ_TOKEN_SIZE, DSMEM_MR_TOKEN_SIZE });
		qps.insert(index);
	}
	assert_true(qps.size() > 50);	// 1000 uniform draws over 64

	t = gen("sweep:qps=4096,ops=500,reuse=1");
	assert_int_equal(t.nobjects(), 3);	// one QP, its CQ, its MR
	t = gen("sweep:qps=1,ops=10");
	assert_int_equal(t.nobjects(), 3);

	dssim::sweep_spec s;
	s.qps = { 8 };
	assert_has(error_of([&] { dssim::generate_sweep(s, 0); }), { "out of range" });
	assert_has(error_of([&] { dssim::generate_sweep(s, 65537); }), { "out of range" });
	s.qp_per_mr = 0;
	assert_has(error_of([&] { dssim::generate_sweep(s, 8); }), { "qp_per_mr" });
}

}  // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compute_next),
		cmocka_unit_test(test_oracle_exact),
		cmocka_unit_test(test_oracle_limit),
		cmocka_unit_test(test_oracle_next_recomputed),
		cmocka_unit_test(test_oracle_truncated),
		cmocka_unit_test(test_dsmem_exact),
		cmocka_unit_test(test_dsmem_doorbell_wqe),
		cmocka_unit_test(test_dsmem_bad_header),
		cmocka_unit_test(test_text_exact),
		cmocka_unit_test(test_text_bad_id),
		cmocka_unit_test(test_csv_map),
		cmocka_unit_test(test_csv_map_bad),
		cmocka_unit_test(test_csv_exact),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_detect_by_content),
		cmocka_unit_test(test_detect_by_name),
		cmocka_unit_test(test_format_override),
		cmocka_unit_test(test_empty_and_missing),
		cmocka_unit_test(test_compressed_same),
		cmocka_unit_test(test_compressed_corrupt),
		cmocka_unit_test(test_xz),
		cmocka_unit_test(test_unsupported_compression),
		cmocka_unit_test(test_libcachesim_csv_map),
		cmocka_unit_test(test_txt),
		cmocka_unit_test(test_twitter),
		cmocka_unit_test(test_twitter_malformed),
		cmocka_unit_test(test_arc),
		cmocka_unit_test(test_arc_malformed),
		cmocka_unit_test(test_lirs_name),
		cmocka_unit_test(test_cache2k_cloud_physics),
		cmocka_unit_test(test_scarab),
		cmocka_unit_test(test_vscsi_v1),
		cmocka_unit_test(test_vscsi_v2),
		cmocka_unit_test(test_vscsi_version_detection),
		cmocka_unit_test(test_vscsi_malformed),
		cmocka_unit_test(test_sample_cloudphysics),
		cmocka_unit_test(test_sample_lirs),
		cmocka_unit_test(test_gen_deterministic),
		cmocka_unit_test(test_gen_counts),
		cmocka_unit_test(test_gen_loop_scan),
		cmocka_unit_test(test_gen_zipf_head),
		cmocka_unit_test(test_gen_zipf_tail),
		cmocka_unit_test(test_gen_mixture),
		cmocka_unit_test(test_gen_bad_specs),
		cmocka_unit_test(test_sweep_parse),
		cmocka_unit_test(test_sweep_structure),
	};
	return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
