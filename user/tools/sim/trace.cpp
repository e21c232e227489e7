// SPDX-License-Identifier: BSD-2-Clause
// Trace readers: a buffered, decompressing byte stream, format detection,
// one reader per format, and the dense-id map they share.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <linux/dsmem_token.h>

#include "sim.hpp"

namespace dssim {

namespace {

constexpr size_t input_chunk = 256 * 1024;	// compressed bytes per read
constexpr size_t stream_buffer = 1024 * 1024;	// also the longest line
constexpr size_t sniff_bytes = 64 * 1024;	// what detection looks at

// ---- a file as a stream of decompressed bytes ------------------------------

class byte_stream {
public:
	// refuse: name an archive or a compression it cannot undo (off
	// when the user gave the format: a binary key may start so)
	byte_stream(const std::string &path, bool refuse);
	~byte_stream();
	byte_stream(const byte_stream &) = delete;
	byte_stream &operator=(const byte_stream &) = delete;

	[[noreturn]] void fail(const std::string &what) const
	{
		throw sim_error(path_ + ": " + what);
	}
	[[noreturn]] void fail_line(const std::string &what) const
	{
		fail("line " + std::to_string(line_no_) + ": " + what);
	}

	// Buffer at least n bytes (fewer only at the end); returns how many
	// are buffered from data() on.
	size_t fill(size_t n);
	const char *data() const { return buf_.data() + pos_; }
	size_t buffered() const { return end_ - pos_; }
	void consume(size_t n) { pos_ += n; }
	// offset of data() in the decompressed stream
	uint64_t offset() const { return base_ + pos_; }
	// The next line without its "\n" or "\r\n"; false at the end.
	bool next_line(std::string_view &line);
	// the file's size when it is read as is (0: unknown or compressed)
	uint64_t plain_size() const { return codec_ == codec::none ? file_size_ : 0; }

private:
	enum class codec { none, gzip, zstd, xz };

	bool read_input();
	size_t read_fd(char *dst, size_t cap);
	size_t produce(char *dst, size_t cap);
	size_t produce_plain(char *dst, size_t cap);
	size_t produce_gzip(char *dst, size_t cap);
	size_t produce_zstd(char *dst, size_t cap);
	size_t produce_xz(char *dst, size_t cap);
	void refuse_compression() const;
	uint64_t input_offset(const void *next) const
	{
		return in_base_ +
		       static_cast<uint64_t>(static_cast<const char *>(next) - in_.data());
	}
	// where the file ended: read_input() may have moved in_base_ past
	// what the decoder's pointers still refer to
	uint64_t input_end() const { return in_base_ + in_end_; }

	// closes the file even when the constructor throws
	struct file_descriptor {
		int fd = -1;
		~file_descriptor()
		{
			if (fd >= 0)
				::close(fd);
		}
	};

	std::string path_;
	file_descriptor file_;
	codec codec_ = codec::none;
	uint64_t file_size_ = 0;

	// compressed input: in_[in_pos_, in_end_) is unread; in_base_ is the
	// file offset of in_[0]
	std::vector<char> in_;
	size_t in_pos_ = 0, in_end_ = 0;
	uint64_t in_base_ = 0;
	bool in_eof_ = false;

	// decompressed bytes: buf_[pos_, end_); base_ is the offset of buf_[0]
	std::vector<char> buf_;
	size_t pos_ = 0, end_ = 0;
	uint64_t base_ = 0;
	bool eof_ = false;
	uint64_t line_no_ = 0;

	z_stream z_ {};
	bool z_ready_ = false;
	ZSTD_DStream *zstd_ = nullptr;
	ZSTD_inBuffer zin_ {};
	lzma_stream xz_ = LZMA_STREAM_INIT;
	bool xz_ready_ = false, xz_done_ = false;
	// LZMA_FINISH once the file has ended, and from then on: liblzma
	// refuses a change of action before the end of the stream
	lzma_action xz_action_ = LZMA_RUN;
	// the decoder may hold output it could not return: ask it again
	// before reading more input
	bool output_pending_ = false;
	bool mid_stream_ = false;	// inside a gzip member or zstd frame
};

byte_stream::byte_stream(const std::string &path, bool refuse) :
	path_(path), in_(input_chunk), buf_(stream_buffer)
{
	file_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (file_.fd < 0)
		fail(std::string("cannot open: ") + std::strerror(errno));
	struct stat st;
	if (fstat(file_.fd, &st) == 0 && S_ISREG(st.st_mode))
		file_size_ = static_cast<uint64_t>(st.st_size);

	// enough bytes for the magic numbers (a pipe may give fewer per read)
	while (in_end_ < 6 && !in_eof_)
		read_input();
	static const unsigned char gzip_magic[] = { 0x1f, 0x8b };
	static const unsigned char zstd_magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
	static const unsigned char xz_magic[] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };
	if (in_end_ >= 2 && !std::memcmp(in_.data(), gzip_magic, 2)) {
		codec_ = codec::gzip;
		// 16 + window bits: gzip framing only
		if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK)
			fail("cannot start gzip decompression");
		z_ready_ = true;
		z_.next_in = reinterpret_cast<Bytef *>(in_.data());
		z_.avail_in = static_cast<uInt>(in_end_);
	} else if (in_end_ >= 4 && !std::memcmp(in_.data(), zstd_magic, 4)) {
		codec_ = codec::zstd;
		zstd_ = ZSTD_createDStream();
		if (!zstd_)
			fail("cannot start zstd decompression");
		// big traces are often packed with --long=31: windows past the
		// default limit of 128 MiB (31 is zstd's largest on 64 bits)
		ZSTD_DCtx_setParameter(zstd_, ZSTD_d_windowLogMax, 31);
		zin_ = { in_.data(), in_end_, 0 };
	} else if (in_end_ >= 6 && !std::memcmp(in_.data(), xz_magic, 6)) {
		codec_ = codec::xz;
		// concatenated: xz streams one after another (as with gzip
		// members) are one trace
		if (lzma_stream_decoder(&xz_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
			fail("cannot start xz decompression");
		xz_ready_ = true;
		xz_.next_in = reinterpret_cast<const uint8_t *>(in_.data());
		xz_.avail_in = in_end_;
	} else if (refuse) {
		refuse_compression();
	}
}

// A compression this stream cannot undo would be read as a binary trace
// of garbage: name it and say what to do instead.
void byte_stream::refuse_compression() const
{
	struct magic {
		const char *bytes;
		size_t len;
		const char *name, *undo;
	};
	static const magic known[] = {
		{ "BZh", 3, "bzip2-compressed", "bzip2 -dc" },
		{ "\x04\x22\x4d\x18", 4, "lz4-compressed", "lz4 -dc" },
		{ "\x02\x21\x4c\x18", 4, "lz4-compressed (legacy frames)", "lz4 -dc" },
		{ "PK\x03\x04", 4, "a zip archive", "unzip -p" },
		{ "7z\xbc\xaf\x27\x1c", 6, "a 7-Zip archive", "7z x -so" },
		{ "LZIP", 4, "lzip-compressed", "lzip -dc" },
		{ "\x1f\x9d", 2, "compress(1)-compressed (.Z)", "gzip -dc" },
	};
	for (const magic &m : known) {
		if (in_end_ < m.len || std::memcmp(in_.data(), m.bytes, m.len))
			continue;
		// "BZh" is followed by the block size, a digit 1-9
		if (m.len == 3 && (in_end_ < 4 || in_.data()[3] < '1' || in_.data()[3] > '9'))
			continue;
		fail(std::string(m.name) + " (by its first bytes); traces are read " +
		     "uncompressed or compressed with gzip, zstd or xz: recompress it, e.g. " +
		     m.undo + " FILE | zstd -o FILE.zst");
	}
}

byte_stream::~byte_stream()
{
	if (z_ready_)
		inflateEnd(&z_);
	ZSTD_freeDStream(zstd_);
	if (xz_ready_)
		lzma_end(&xz_);
}

size_t byte_stream::read_fd(char *dst, size_t cap)
{
	for (;;) {
		ssize_t n = ::read(file_.fd, dst, cap);
		if (n >= 0)
			return static_cast<size_t>(n);
		if (errno != EINTR)
			fail(std::string("read error: ") + std::strerror(errno));
	}
}

// Append raw bytes to in_ (after the decoder has consumed what it holds,
// they start at in_[0]); false at the end of the file.
bool byte_stream::read_input()
{
	if (in_eof_)
		return false;
	if (in_pos_ == in_end_) {
		in_base_ += in_end_;
		in_pos_ = in_end_ = 0;
	}
	size_t n = read_fd(in_.data() + in_end_, in_.size() - in_end_);
	if (n == 0)
		in_eof_ = true;
	in_end_ += n;
	return n > 0;
}

size_t byte_stream::produce_plain(char *dst, size_t cap)
{
	if (in_pos_ < in_end_) {
		size_t n = std::min(cap, in_end_ - in_pos_);
		std::memcpy(dst, in_.data() + in_pos_, n);
		in_pos_ += n;
		return n;
	}
	return read_fd(dst, cap);
}

size_t byte_stream::produce_gzip(char *dst, size_t cap)
{
	z_.next_out = reinterpret_cast<Bytef *>(dst);
	z_.avail_out = static_cast<uInt>(std::min<size_t>(cap, std::numeric_limits<uInt>::max()));
	const uInt room = z_.avail_out;
	while (z_.avail_out == room) {
		if (z_.avail_in == 0 && !output_pending_) {
			in_pos_ = in_end_;	// the decoder took it all
			if (!read_input()) {
				if (mid_stream_)
					fail("truncated gzip data at offset " +
					     std::to_string(input_end()));
				break;
			}
			z_.next_in = reinterpret_cast<Bytef *>(in_.data());
			z_.avail_in = static_cast<uInt>(in_end_);
		}
		if (z_.avail_in)
			mid_stream_ = true;
		int ret = inflate(&z_, Z_NO_FLUSH);
		output_pending_ = z_.avail_out == 0;
		if (ret == Z_STREAM_END) {
			// all of the member is out; concatenated members (gzip -c
			// a b) form one stream
			mid_stream_ = output_pending_ = false;
			inflateReset(&z_);
		} else if (ret == Z_BUF_ERROR && z_.avail_in == 0) {
			output_pending_ = false;	// it needs input
		} else if (ret != Z_OK) {
			fail("corrupt gzip data at offset " +
			     std::to_string(input_offset(z_.next_in)) + ": " +
			     (z_.msg ? z_.msg : zError(ret)));
		}
	}
	return room - z_.avail_out;
}

size_t byte_stream::produce_zstd(char *dst, size_t cap)
{
	ZSTD_outBuffer out = { dst, cap, 0 };
	while (out.pos == 0) {
		if (zin_.pos == zin_.size && !output_pending_) {
			in_pos_ = in_end_;
			if (!read_input()) {
				if (mid_stream_)
					fail("truncated zstd data at offset " +
					     std::to_string(input_end()));
				break;
			}
			zin_ = { in_.data(), in_end_, 0 };
		}
		size_t ret = ZSTD_decompressStream(zstd_, &out, &zin_);
		if (ZSTD_isError(ret))
			fail("corrupt zstd data at offset " + std::to_string(in_base_ + zin_.pos) +
			     ": " + ZSTD_getErrorName(ret));
		mid_stream_ = ret != 0;	// 0: a frame is complete and flushed
		output_pending_ = mid_stream_ && out.pos == out.size;
	}
	return out.pos;
}

size_t byte_stream::produce_xz(char *dst, size_t cap)
{
	if (xz_done_)
		return 0;
	xz_.next_out = reinterpret_cast<uint8_t *>(dst);
	xz_.avail_out = cap;
	lzma_action &action = xz_action_;
	while (xz_.avail_out == cap) {
		if (xz_.avail_in == 0 && !output_pending_ && action == LZMA_RUN) {
			in_pos_ = in_end_;
			if (read_input()) {
				xz_.next_in = reinterpret_cast<const uint8_t *>(in_.data());
				xz_.avail_in = in_end_;
			} else {
				// LZMA_CONCATENATED ends only when told that
				// the input has
				action = LZMA_FINISH;
			}
		}
		lzma_ret ret = lzma_code(&xz_, action);
		output_pending_ = xz_.avail_out == 0;
		if (ret == LZMA_STREAM_END) {
			xz_done_ = true;
			break;
		}
		if (ret == LZMA_OK)
			continue;
		if (action == LZMA_FINISH && ret == LZMA_BUF_ERROR)
			fail("truncated xz data at offset " + std::to_string(input_end()));
		if (ret == LZMA_MEM_ERROR)
			fail("out of memory for xz decompression");
		fail("corrupt xz data at offset " + std::to_string(input_offset(xz_.next_in)) +
		     (ret == LZMA_FORMAT_ERROR ? ": not an xz stream" :
		      ret == LZMA_OPTIONS_ERROR ? ": unsupported xz options" :
		      ret == LZMA_DATA_ERROR ? ": compressed data is corrupt" :
		      ": xz error " + std::to_string(ret)));
	}
	return cap - xz_.avail_out;
}

size_t byte_stream::produce(char *dst, size_t cap)
{
	switch (codec_) {
	case codec::gzip: return produce_gzip(dst, cap);
	case codec::zstd: return produce_zstd(dst, cap);
	case codec::xz: return produce_xz(dst, cap);
	default: return produce_plain(dst, cap);
	}
}

size_t byte_stream::fill(size_t n)
{
	if (end_ - pos_ >= n || eof_)
		return end_ - pos_;
	std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
	base_ += pos_;
	end_ -= pos_;
	pos_ = 0;
	if (n > buf_.size())
		buf_.resize(n);
	while (end_ < n && !eof_) {
		size_t got = produce(buf_.data() + end_, buf_.size() - end_);
		eof_ = got == 0;
		end_ += got;
	}
	return end_;
}

bool byte_stream::next_line(std::string_view &line)
{
	size_t scanned = 0;
	for (;;) {
		const char *p = data();
		size_t have = buffered();
		auto *nl =
			static_cast<const char *>(std::memchr(p + scanned, '\n', have - scanned));
		size_t len = nl ? static_cast<size_t>(nl - p) : have;
		if (nl || (eof_ && have > 0)) {
			line_no_++;
			consume(nl ? len + 1 : len);
			if (len && p[len - 1] == '\r')
				len--;
			line = std::string_view(p, len);
			return true;
		}
		if (eof_)
			return false;
		if (have >= stream_buffer) {
			line_no_++;
			fail_line("longer than " + std::to_string(stream_buffer) + " bytes");
		}
		scanned = have;
		fill(have + 1);
	}
}

// ---- helpers ---------------------------------------------------------------

uint32_t load_le32(const char *p)
{
	auto *b = reinterpret_cast<const unsigned char *>(p);
	return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
	       static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

uint64_t load_le64(const char *p)
{
	return load_le32(p) | static_cast<uint64_t>(load_le32(p + 4)) << 32;
}

uint64_t mix64(uint64_t x)
{
	return mix64_finish(x);
}

// FNV-1a 64: string ids become keys
uint64_t hash_string(std::string_view s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char c : s) {
		h ^= c;
		h *= 0x100000001b3ULL;
	}
	return h;
}

bool parse_u64(std::string_view s, uint64_t &v)
{
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

// s in double quotes for a message: at most 40 bytes, the unprintable
// ones (a binary file read as text) as \xNN
std::string quoted(std::string_view s)
{
	std::string out = "\"";
	for (unsigned char c : s.substr(0, 40)) {
		if (c >= 0x20 && c < 0x7f) {
			out += static_cast<char>(c);
		} else {
			char hex[8];
			std::snprintf(hex, sizeof(hex), "\\x%02x", c);
			out += hex;
		}
	}
	return out + (s.size() > 40 ? "...\"" : "\"");
}

// Memory for big tables probed at random: in 2 MiB pages where the
// kernel has them (transparent huge pages in madvise mode), as a TLB miss
// per probe would cost as much as the cache miss.
template <typename T>
struct huge_page_allocator {
	using value_type = T;
	static constexpr size_t huge_page = 2 * 1024 * 1024;

	huge_page_allocator() = default;
	template <typename U>
	huge_page_allocator(const huge_page_allocator<U> &) {}

	T *allocate(size_t n)
	{
		size_t bytes = n * sizeof(T);
		if (bytes < huge_page)
			return static_cast<T *>(::operator new(bytes));
		bytes = (bytes + huge_page - 1) / huge_page * huge_page;
		void *p = std::aligned_alloc(huge_page, bytes);
		if (!p)
			throw std::bad_alloc();
		madvise(p, bytes, MADV_HUGEPAGE);
		return static_cast<T *>(p);
	}

	void deallocate(T *p, size_t n)
	{
		if (n * sizeof(T) < huge_page)
			::operator delete(p);
		else
			std::free(p);
	}

	bool operator==(const huge_page_allocator &) const { return true; }
};

// Keys to dense ids in order of first appearance: open addressing with
// linear probing, kept at most half full.
class dense_ids {
public:
	dense_ids(trace &t, size_t expected_objects) : keys_(t.keys)
	{
		size_t cap = 1024;
		while (cap < 2 * expected_objects)
			cap *= 2;
		slots_.resize(cap);
	}

	uint32_t operator()(uint64_t key)
	{
		const size_t mask = slots_.size() - 1;
		for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
			if (slots_[i].id_plus_1 == 0)
				return insert(i, key);
			if (slots_[i].key == key)
				return slots_[i].id_plus_1 - 1;
		}
	}

	void prefetch(uint64_t key) const
	{
		__builtin_prefetch(&slots_[mix64(key) & (slots_.size() - 1)]);
	}

private:
	struct slot {
		uint64_t key;
		uint32_t id_plus_1;	// 0: empty
	};

	uint32_t insert(size_t i, uint64_t key)
	{
		if (keys_.size() >= std::numeric_limits<uint32_t>::max() - 1)
			throw sim_error("more than 4G distinct objects");
		auto id = static_cast<uint32_t>(keys_.size());
		keys_.push_back(key);
		slots_[i] = { key, id + 1 };
		if (2 * keys_.size() > slots_.size())
			grow();
		return id;
	}

	void grow()
	{
		std::vector<slot, huge_page_allocator<slot>> old(2 * slots_.size());
		old.swap(slots_);
		const size_t mask = slots_.size() - 1;
		for (const slot &s : old) {
			if (!s.id_plus_1)
				continue;
			size_t i = mix64(s.key) & mask;
			while (slots_[i].id_plus_1)
				i = (i + 1) & mask;
			slots_[i] = s;
		}
	}

	std::vector<uint64_t> &keys_;
	std::vector<slot, huge_page_allocator<slot>> slots_;
};

// Appends the dense ids of keys to t.ids a batch at a time: each key's
// slot is prefetched as it arrives, so that the lookups (a cache miss
// each once the table outgrows the cache) overlap.  flush() at the end.
class id_batch {
public:
	id_batch(trace &t, size_t expected_objects) : dense_(t, expected_objects), ids_(t.ids) {}

	void push(uint64_t key)
	{
		dense_.prefetch(key);
		pending_[count_++] = key;
		if (count_ == batch)
			flush();
	}

	void flush()
	{
		for (size_t i = 0; i < count_; i++)
			ids_.push_back(dense_(pending_[i]));
		count_ = 0;
	}

	// requests so far, flushed or not
	uint64_t size() const { return ids_.size() + count_; }

private:
	static constexpr size_t batch = 64;

	dense_ids dense_;
	std::vector<uint32_t> &ids_;
	uint64_t pending_[batch];
	size_t count_ = 0;
};

uint64_t request_limit(const read_opts &o)
{
	return o.limit ? o.limit : std::numeric_limits<uint64_t>::max();
}

// ---- oracleGeneral ---------------------------------------------------------

constexpr size_t oracle_rec = 24;

// Whether next[] links each request to the following request of the same
// object and the last one to -1: the oracleGeneral writer's fields, once
// converted, must agree exactly with compute_next().
bool next_is_consistent(const trace &t)
{
	std::vector<int64_t> last(t.nobjects(), -1);
	for (size_t i = 0; i < t.size(); i++) {
		int64_t &prev = last[t.ids[i]];
		if (prev >= 0 && t.next[static_cast<size_t>(prev)] != static_cast<int64_t>(i))
			return false;
		prev = static_cast<int64_t>(i);
	}
	for (int64_t l : last)
		if (l >= 0 && t.next[static_cast<size_t>(l)] != -1)
			return false;
	return true;
}

void read_oracle(byte_stream &s, const read_opts &o, trace &t)
{
	uint64_t limit = request_limit(o);
	size_t expected =
		static_cast<size_t>(std::min<uint64_t>(s.plain_size() / oracle_rec, limit));
	t.ids.reserve(expected);
	t.sizes.reserve(expected);
	if (o.want_times)
		t.times_ns.reserve(expected);
	if (o.want_next)
		t.next.reserve(expected);
	id_batch ids(t, 65536);	// it grows: the objects are not known

	while (ids.size() < limit) {
		size_t have = s.fill(oracle_rec);
		if (have == 0)
			break;
		if (have < oracle_rec)
			s.fail("truncated record at offset " + std::to_string(s.offset()) + " (" +
			       std::to_string(have) + " of " + std::to_string(oracle_rec) +
			       " bytes)");
		size_t n = static_cast<size_t>(
			std::min<uint64_t>(have / oracle_rec, limit - ids.size()));
		const char *p = s.data();
		for (size_t r = 0; r < n; r++, p += oracle_rec) {
			if (o.want_times)
				t.times_ns.push_back(static_cast<uint64_t>(load_le32(p)) * 1000000000ULL);
			ids.push(load_le64(p + 4));
			t.sizes.push_back(load_le32(p + 12));
			if (o.want_next)
				t.next.push_back(static_cast<int64_t>(load_le64(p + 16)));
		}
		s.consume(n * oracle_rec);
	}
	ids.flush();
	if (!o.want_next)
		return;

	// libCacheSim writes the logical time of the next request, which
	// counts requests from 1 (cloudPhysicsIO: every field is the index of
	// the next request + 1); -1 or INT64_MAX when there is none.  A
	// request beyond the limit is none too.
	const auto count = static_cast<int64_t>(t.ids.size());
	for (int64_t &n : t.next)
		n = n >= 1 && n <= count ? n - 1 : -1;
	// A writer that counts otherwise would mislead Belady: recompute.
	if (!next_is_consistent(t))
		compute_next(t);
}

// ---- dsmem (the module's own capture) ---------------------------------------

uint32_t token_size(uint32_t type)
{
	switch (type) {
	case DSMEM_TOKEN_PD: return DSMEM_PD_TOKEN_SIZE;
	case DSMEM_TOKEN_MR: return DSMEM_MR_TOKEN_SIZE;
	case DSMEM_TOKEN_CQ: return DSMEM_CQ_TOKEN_SIZE;
	case DSMEM_TOKEN_DB: return DSMEM_DB_TOKEN_SIZE;
	case DSMEM_TOKEN_WQE: return DSMEM_WQE_TOKEN_SIZE;
	default: return DSMEM_QP_TOKEN_SIZE;
	}
}

void read_dsmem_header(byte_stream &s)
{
	size_t have = s.fill(DSMEM_TRACE_HDR_SIZE);
	if (have < DSMEM_TRACE_HDR_SIZE)
		s.fail("truncated dsmem header at offset 0 (" + std::to_string(have) + " of " +
		       std::to_string(DSMEM_TRACE_HDR_SIZE) + " bytes)");
	const char *p = s.data();
	if (std::memcmp(p, DSMEM_TRACE_MAGIC, 8))
		s.fail("not a dsmem trace (no \"" DSMEM_TRACE_MAGIC "\" magic at offset 0)");
	uint32_t version = load_le32(p + 8);
	if (version != DSMEM_TRACE_VERSION)
		s.fail("dsmem trace version " + std::to_string(version) +
		       " at offset 8 (this reader knows " + std::to_string(DSMEM_TRACE_VERSION) +
		       ")");
	uint32_t rec_size = load_le32(p + 12);
	if (rec_size != DSMEM_TRACE_REC_SIZE)
		s.fail("dsmem record size " + std::to_string(rec_size) + " at offset 12 (version " +
		       std::to_string(DSMEM_TRACE_VERSION) + " has " +
		       std::to_string(DSMEM_TRACE_REC_SIZE) + ")");
	s.consume(DSMEM_TRACE_HDR_SIZE);
}

// One record; those that are not accesses are left out.
void add_dsmem_record(byte_stream &s, const char *p, trace &t, dense_ids &dense)
{
	uint8_t op = static_cast<uint8_t>(p[17]);
	if (op == DSMEM_TRACE_CREATE || op == DSMEM_TRACE_DESTROY)
		return;
	if (op > DSMEM_TRACE_DESTROY)
		s.fail("unknown op " + std::to_string(op) + " in the record at offset " +
		       std::to_string(s.offset()));
	uint32_t handle = load_le32(p + 8);
	uint32_t type = DSMEM_HANDLE_TYPE(handle);
	uint32_t index = DSMEM_HANDLE_INDEX(handle);
	// an object is its type and index: a new generation is the same slot
	uint64_t key = handle & ~(DSMEM_HANDLE_GEN_MASK << DSMEM_HANDLE_GEN_SHIFT);
	size_t objects = t.keys.size();
	uint32_t id = dense(key);
	if (t.keys.size() > objects) {
		t.eids.push_back(type << 16 | index);
		t.types.push_back(static_cast<uint8_t>(type));
	}
	t.ids.push_back(id);
	t.times_ns.push_back(load_le64(p));
	t.writes.push_back(op == DSMEM_TRACE_MODIFY || op == DSMEM_TRACE_WRITE);
	// token sizes, so that byte capacities mean NIC SRAM bytes
	t.sizes.push_back(token_size(type));
}

void read_dsmem(byte_stream &s, const read_opts &o, trace &t)
{
	read_dsmem_header(s);
	uint64_t limit = request_limit(o);
	dense_ids dense(t, 4096);
	while (t.ids.size() < limit) {
		size_t have = s.fill(DSMEM_TRACE_REC_SIZE);
		if (have == 0)
			break;
		if (have < DSMEM_TRACE_REC_SIZE)
			s.fail("truncated record at offset " + std::to_string(s.offset()) + " (" +
			       std::to_string(have) + " of " +
			       std::to_string(DSMEM_TRACE_REC_SIZE) + " bytes)");
		add_dsmem_record(s, s.data(), t, dense);
		s.consume(DSMEM_TRACE_REC_SIZE);
	}
}

// ---- text: one block number per line ----------------------------------------

// text (the LIRS traces) takes numbers only, so that a binary file read
// as text fails at once; txt (libCacheSim's) hashes any other id, as its
// reader does unless told the ids are numbers.
void read_text(byte_stream &s, const read_opts &o, trace &t, bool hash_words)
{
	uint64_t limit = request_limit(o);
	id_batch ids(t, 65536);
	std::string_view line;
	while (ids.size() < limit && s.next_line(line)) {
		line = trim(line);
		if (line.empty() || line == "*")	// "*": a LIRS checkpoint
			continue;
		uint64_t key;
		if (!parse_u64(line, key)) {
			if (!hash_words)
				s.fail_line(quoted(line) +
					    " is not a block number (an unsigned integer)");
			key = hash_string(line);
		}
		ids.push(key);
	}
	ids.flush();
}

// ---- csv ----------------------------------------------------------------------

// Split line at sep into fields (up to max_fields); a field in double
// quotes may hold sep.
void split_fields(std::string_view line, char sep, size_t max_fields,
		  std::vector<std::string_view> &fields)
{
	fields.clear();
	size_t i = 0;
	while (fields.size() < max_fields) {
		size_t start = i, stop;
		if (i < line.size() && line[i] == '"') {
			size_t close = line.find('"', i + 1);
			stop = close == std::string_view::npos ? line.size() : close + 1;
			stop = std::min(line.find(sep, stop), line.size());
		} else {
			stop = std::min(line.find(sep, i), line.size());
		}
		std::string_view field = line.substr(start, stop - start);
		if (sep != ' ' && sep != '\t')
			field = trim(field);
		if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
			field = field.substr(1, field.size() - 2);
		fields.push_back(field);
		if (stop >= line.size())
			break;
		i = stop + 1;
	}
}

struct csv_reader {
	byte_stream &s;
	const csv_map &map;
	trace &t;
	id_batch ids;
	std::vector<std::string_view> fields;

	std::string_view column(int col, const char *name) const
	{
		if (static_cast<size_t>(col) > fields.size())
			s.fail_line("has " + std::to_string(fields.size()) + " column" +
				    (fields.size() == 1 ? "" : "s") + ", " + name + " is column " +
				    std::to_string(col));
		return fields[static_cast<size_t>(col) - 1];
	}

	uint64_t number(int col, const char *name, uint64_t max) const
	{
		std::string_view v = column(col, name);
		uint64_t n;
		if (!parse_u64(v, n))
			s.fail_line("column " + std::to_string(col) + " " + quoted(v) +
				    " is not a number");
		if (n > max)
			s.fail_line("column " + std::to_string(col) + " " + quoted(v) +
				    " is out of range for " + name);
		return n;
	}

	bool is_write(int col) const
	{
		std::string_view v = column(col, "op");
		if (v == "w" || v == "W" || v == "write" || v == "WRITE" || v == "1")
			return true;
		if (v == "r" || v == "R" || v == "read" || v == "READ" || v == "0")
			return false;
		s.fail_line("column " + std::to_string(col) + " " + quoted(v) +
			    " is not an operation (r, read, 0, w, write, 1)");
	}

	void add(std::string_view line)
	{
		int last = std::max({ map.id, map.time, map.size, map.op });
		split_fields(line, map.sep, static_cast<size_t>(last), fields);
		std::string_view id = column(map.id, "id");
		if (id.empty())
			s.fail_line("column " + std::to_string(map.id) + " (id) is empty");
		uint64_t key;
		if (!parse_u64(id, key))
			key = hash_string(id);
		ids.push(key);
		if (map.time)
			t.times_ns.push_back(
				number(map.time, "time", std::numeric_limits<uint64_t>::max()));
		if (map.size)
			t.sizes.push_back(static_cast<uint32_t>(
				number(map.size, "size", std::numeric_limits<uint32_t>::max())));
		if (map.op)
			t.writes.push_back(is_write(map.op));
	}
};

void read_csv(byte_stream &s, const read_opts &o, trace &t)
{
	if (!o.csv.id)
		s.fail("CSV needs its columns: give them with csv id=N[,time=N...]");
	uint64_t limit = request_limit(o);
	csv_reader reader { s, o.csv, t, id_batch(t, 65536), {} };
	std::string_view line;
	if (o.csv.header)
		s.next_line(line);
	while (reader.ids.size() < limit && s.next_line(line)) {
		if (trim(line).empty())
			continue;
		reader.add(line);
	}
	reader.ids.flush();
}

// ---- arc: "start_block num_blocks ignored request_id" per line -----------------

// The ARC paper's traces (Megiddo and Modha), as Caffeine's ArcTraceReader
// reads them: a request is num_blocks consecutive blocks from start_block;
// fields past the second are not used.
void read_arc(byte_stream &s, const read_opts &o, trace &t)
{
	uint64_t limit = request_limit(o);
	id_batch ids(t, 65536);
	std::vector<std::string_view> fields;
	std::string_view line;
	while (ids.size() < limit && s.next_line(line)) {
		line = trim(line);
		if (line.empty())
			continue;
		split_fields(line, ' ', 3, fields);
		if (fields.size() < 2)
			s.fail_line(quoted(line) + " is not an ARC record " +
				    "(start_block num_blocks ignored request_id)");
		uint64_t start, count;
		if (!parse_u64(fields[0], start))
			s.fail_line("start block " + quoted(fields[0]) + " is not a number");
		if (!parse_u64(fields[1], count))
			s.fail_line("block count " + quoted(fields[1]) + " is not a number");
		if (count > std::numeric_limits<uint64_t>::max() - start)
			s.fail_line("blocks " + std::string(fields[0]) + " + " +
				    std::string(fields[1]) + " run past 2^64");
		// (Caffeine reads the count as an int: one line must not
		// expand to billions of requests)
		if (count > std::numeric_limits<int32_t>::max())
			s.fail_line("block count " + std::string(fields[1]) +
				    " is out of range (at most 2^31 - 1)");
		for (uint64_t k = 0; k < count && ids.size() < limit; k++)
			ids.push(start + k);
	}
	ids.flush();
}

// ---- twitter: twitter/cache-trace CSV ----------------------------------------------

// "timestamp,anonymized key,key size,value size,client id,operation,TTL"
constexpr size_t twitter_fields = 7;

enum class twitter_op { read, write, skip, unknown };

twitter_op classify_twitter(std::string_view op)
{
	if (op == "get" || op == "gets")
		return twitter_op::read;
	static const char *const writes[] = { "set",	 "add",	    "replace", "cas",
					      "append", "prepend", "incr",    "decr" };
	for (const char *w : writes)
		if (op == w)
			return twitter_op::write;
	// the trace model has no invalidation: a delete is not an access
	return op == "delete" ? twitter_op::skip : twitter_op::unknown;
}

void read_twitter(byte_stream &s, const read_opts &o, trace &t)
{
	uint64_t limit = request_limit(o);
	id_batch ids(t, 65536);
	std::vector<std::string_view> fields;
	std::string_view line;
	auto number = [&](size_t i, const char *name) {
		uint64_t v;
		if (!parse_u64(fields[i], v))
			s.fail_line(std::string(name) + " (field " + std::to_string(i + 1) + ") " +
				    quoted(fields[i]) + " is not a number");
		return v;
	};
	while (ids.size() < limit && s.next_line(line)) {
		if (trim(line).empty())
			continue;
		split_fields(line, ',', twitter_fields + 1, fields);
		if (fields.size() != twitter_fields)
			s.fail_line("has " + std::to_string(fields.size()) + " field" +
				    (fields.size() == 1 ? "" : "s") + "; a Twitter record has 7 " +
				    "(timestamp,key,key size,value size,client id,operation,TTL)");
		twitter_op op = classify_twitter(fields[5]);
		if (op == twitter_op::unknown)
			s.fail_line("operation " + quoted(fields[5]) +
				    " is not one of get, gets, set, add, replace, cas, append, " +
				    "prepend, incr, decr, delete");
		if (op == twitter_op::skip)
			continue;
		if (fields[1].empty())
			s.fail_line("the key (field 2) is empty");
		// each checked alone first: their sum must not wrap
		uint64_t time = number(0, "timestamp"), key_size = number(2, "key size"),
			 value_size = number(3, "value size");
		if (key_size > std::numeric_limits<uint32_t>::max() ||
		    value_size > std::numeric_limits<uint32_t>::max())
			s.fail_line("key size " + std::to_string(key_size) + " or value size " +
				    std::to_string(value_size) + " is out of range");
		uint64_t size = key_size + value_size;
		if (size > std::numeric_limits<uint32_t>::max())
			s.fail_line("key size + value size " + std::to_string(size) +
				    " is out of range");
		if (time > std::numeric_limits<uint64_t>::max() / 1000000000ULL)
			s.fail_line("timestamp " + std::to_string(time) + " is out of range");
		ids.push(hash_string(fields[1]));	// anonymized keys are strings
		t.times_ns.push_back(time * 1000000000ULL);	// seconds
		t.sizes.push_back(static_cast<uint32_t>(size));
		t.writes.push_back(op == twitter_op::write);
	}
	ids.flush();
	if (!o.want_times)
		t.times_ns.clear();
}

// ---- cache2k, cloud-physics, scarab: big-endian keys ----------------------------------

// Caffeine's binary traces hold nothing but keys, as Java's DataInputStream
// writes them: big-endian.  cache2k: a signed 32-bit int (Caffeine widens
// it to a long, so its sign extends); cloud-physics: an unsigned 32-bit
// int; scarab: a 64-bit long.
void read_be_keys(byte_stream &s, const read_opts &o, trace &t, size_t width, bool sign)
{
	uint64_t limit = request_limit(o);
	t.ids.reserve(static_cast<size_t>(std::min<uint64_t>(s.plain_size() / width, limit)));
	id_batch ids(t, 65536);
	while (ids.size() < limit) {
		size_t have = s.fill(width);
		if (have == 0)
			break;
		if (have < width)
			s.fail("truncated record at offset " + std::to_string(s.offset()) + " (" +
			       std::to_string(have) + " of " + std::to_string(width) + " bytes)");
		size_t n = static_cast<size_t>(
			std::min<uint64_t>(have / width, limit - ids.size()));
		auto *p = reinterpret_cast<const unsigned char *>(s.data());
		for (size_t r = 0; r < n; r++, p += width) {
			uint64_t key = 0;
			for (size_t b = 0; b < width; b++)
				key = key << 8 | p[b];
			if (sign && width == 4)
				key = static_cast<uint64_t>(
					static_cast<int64_t>(static_cast<int32_t>(key)));
			ids.push(key);
		}
		s.consume(n * width);
	}
	ids.flush();
}

// ---- vscsi: VMware vSCSI block traces (libCacheSim's vscsi) ------------------------

// Little-endian records without a header, in one of two layouts:
//   V1, 32 bytes: sn u32 @0, len u32 @4, nSG u32 @8, cmd u16 @12, ver u16 @14,
//                 lbn u64 @16, ts u64 @24
//   V2, 40 bytes: cmd u16 @0, ver u16 @2, sn u32 @4, len u32 @8, nSG u32 @12,
//                 lbn u64 @16, ts u64 @24, rt u64 @32
// The version is the high byte of ver; as libCacheSim does, the first two
// records are read as V2 first (that byte 2 in both), then as V1 (1 in
// both); a file of one record is judged by it alone.  The id is lbn, the
// size len (bytes), the time ts (microseconds; libCacheSim rounds it down
// to seconds, kept whole here).  libCacheSim leaves cmd unread; here the
// SCSI WRITE opcodes (its low byte) mark writes, which change no hit or
// miss.  Unlike libCacheSim, a file that is not a whole number of records
// is refused rather than cut short.
struct vscsi_layout {
	int version;
	size_t rec, ver_byte, len, cmd;
};
constexpr vscsi_layout vscsi_v1 { 1, 32, 15, 4, 12 };
constexpr vscsi_layout vscsi_v2 { 2, 40, 3, 8, 0 };
constexpr size_t vscsi_lbn = 16, vscsi_ts = 24;

bool vscsi_write_cmd(uint8_t op)
{
	// WRITE(6), WRITE(10), WRITE(12), WRITE(16)
	return op == 0x0a || op == 0x2a || op == 0xaa || op == 0x8a;
}

// Whether the records that the first have bytes hold (up to two, at least
// one) all carry l's version.
bool vscsi_is(const vscsi_layout &l, const char *p, size_t have)
{
	size_t n = std::min<size_t>(have / l.rec, 2);
	for (size_t i = 0; i < n; i++)
		if (static_cast<unsigned char>(p[i * l.rec + l.ver_byte]) != l.version)
			return false;
	return n > 0;
}

std::string vscsi_version_bytes(const vscsi_layout &l, const char *p, size_t have)
{
	std::string out;
	for (size_t i = 0; i < std::min<size_t>(have / l.rec, 2); i++) {
		char hex[16];
		std::snprintf(hex, sizeof(hex), "%s0x%02x", i ? ", " : "",
			      static_cast<unsigned char>(p[i * l.rec + l.ver_byte]));
		out += hex;
	}
	return out.empty() ? "none (no whole record)" : out;
}

vscsi_layout vscsi_detect(byte_stream &s)
{
	size_t have = s.fill(2 * vscsi_v2.rec);
	if (have == 0)
		s.fail("vscsi: empty (no records; a vscsi trace is 32-byte V1 or 40-byte V2 "
		       "records)");
	if (have < vscsi_v1.rec)
		s.fail("vscsi: truncated record at offset 0 (" + std::to_string(have) +
		       " bytes; a V1 record has 32, a V2 record 40)");
	const char *p = s.data();
	vscsi_layout l {};
	if (vscsi_is(vscsi_v2, p, have))
		l = vscsi_v2;
	else if (vscsi_is(vscsi_v1, p, have))
		l = vscsi_v1;
	if (!l.version)
		s.fail("vscsi: unknown record version: version byte " +
		       vscsi_version_bytes(vscsi_v2, p, have) + " read as V2 (offset 3 of " +
		       "40-byte records, 2 expected) and " +
		       vscsi_version_bytes(vscsi_v1, p, have) + " read as V1 (offset 15 " +
		       "of 32-byte records, 1 expected)");
	uint64_t size = s.plain_size();
	if (size % l.rec)
		s.fail("vscsi: " + std::to_string(size) + " bytes are not a whole number of " +
		       std::to_string(l.rec) + "-byte V" + std::to_string(l.version) +
		       " records (the version its first records give; " +
		       std::to_string(size % l.rec) + " bytes left over)");
	return l;
}

void read_vscsi(byte_stream &s, const read_opts &o, trace &t)
{
	const vscsi_layout l = vscsi_detect(s);
	const std::string what = "vscsi V" + std::to_string(l.version) + ": ";
	uint64_t limit = request_limit(o);
	size_t expected =
		static_cast<size_t>(std::min<uint64_t>(s.plain_size() / l.rec, limit));
	t.ids.reserve(expected);
	t.sizes.reserve(expected);
	t.writes.reserve(expected);
	if (o.want_times)
		t.times_ns.reserve(expected);
	id_batch ids(t, 65536);
	while (ids.size() < limit) {
		size_t have = s.fill(l.rec);
		if (have == 0)
			break;
		if (have < l.rec)
			s.fail(what + "truncated record at offset " + std::to_string(s.offset()) +
			       " (" + std::to_string(have) + " of " + std::to_string(l.rec) +
			       " bytes)");
		size_t n = static_cast<size_t>(
			std::min<uint64_t>(have / l.rec, limit - ids.size()));
		const char *p = s.data();
		for (size_t r = 0; r < n; r++, p += l.rec) {
			uint64_t ts = load_le64(p + vscsi_ts);
			if (ts > std::numeric_limits<uint64_t>::max() / 1000)
				s.fail(what + "timestamp " + std::to_string(ts) +
				       " us is out of range in the record at offset " +
				       std::to_string(s.offset() + r * l.rec));
			if (o.want_times)
				t.times_ns.push_back(ts * 1000);
			ids.push(load_le64(p + vscsi_lbn));
			t.sizes.push_back(load_le32(p + l.len));
			t.writes.push_back(vscsi_write_cmd(static_cast<uint8_t>(p[l.cmd])));
		}
		s.consume(n * l.rec);
	}
	ids.flush();
}

// ---- format detection --------------------------------------------------------

// What `format` takes; lirs is Caffeine's name for what text reads.
const char *const format_names[] = { "oracleGeneral", "csv", "text", "txt",
				     "dsmem", "twitter", "arc", "lirs",
				     "cache2k", "scarab", "cloud-physics", "vscsi" };
const char format_list[] =
	"oracleGeneral|csv|text|txt|dsmem|twitter|arc|lirs|cache2k|scarab|cloud-physics|vscsi";

bool ends_with(std::string_view s, std::string_view tail)
{
	return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The format a file's name gives (after its compression suffix), or "".
std::string format_by_name(const std::string &path)
{
	std::string name = ascii_lower(path.substr(path.find_last_of('/') + 1));
	for (const char *suffix : { ".gz", ".zst", ".zstd", ".xz" })
		if (ends_with(name, suffix)) {
			name.resize(name.size() - std::strlen(suffix));
			break;
		}
	if (name.find("oraclegeneral") != std::string::npos ||
	    (ends_with(name, ".bin") && name.find("oracle") != std::string::npos))
		return "oracleGeneral";
	if (ends_with(name, ".csv"))
		return "csv";
	if (ends_with(name, ".trace") || ends_with(name, ".txt"))
		return "text";
	if (ends_with(name, ".lis"))	// the ARC traces: P1.lis, OLTP.lis...
		return "arc";
	return "";
}

// The non-blank lines of a sample, trimmed.
std::vector<std::string_view> sample_lines(std::string_view sample)
{
	std::vector<std::string_view> lines;
	while (!sample.empty()) {
		size_t nl = std::min(sample.find('\n'), sample.size());
		std::string_view line = trim(sample.substr(0, nl));
		sample.remove_prefix(std::min(nl + 1, sample.size()));
		if (!line.empty())
			lines.push_back(line);
	}
	return lines;
}

// CSV when one separator splits every line into the same number (2 or
// more) of fields: prose, with its spaces, does not pass.
bool looks_like_csv(const std::vector<std::string_view> &lines)
{
	for (char sep : { ',', ';', '\t', '|', ' ' }) {
		auto fields = [sep](std::string_view line) {
			return 1 + std::count(line.begin(), line.end(), sep);
		};
		const auto first = fields(lines.front());
		auto same = [&](std::string_view line) { return fields(line) == first; };
		if (first >= 2 && std::all_of(lines.begin(), lines.end(), same))
			return true;
	}
	return false;
}

// "text", "csv" or "" from the first bytes (complete lines only).
std::string format_by_content(std::string_view sample, bool whole)
{
	if (!whole) {
		size_t nl = sample.rfind('\n');
		sample = sample.substr(0, nl == std::string_view::npos ? 0 : nl + 1);
	}
	for (unsigned char c : sample)
		if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
			return "";
	std::vector<std::string_view> lines = sample_lines(sample);
	if (lines.empty())
		return "";
	uint64_t v;
	if (std::all_of(lines.begin(), lines.end(),
			[&](std::string_view l) { return l == "*" || parse_u64(l, v); }))
		return "text";
	// twitter/cache-trace: 7 fields, a number first, an operation sixth
	std::vector<std::string_view> fields;
	auto twitter = [&](std::string_view l) {
		split_fields(l, ',', twitter_fields + 1, fields);
		return fields.size() == twitter_fields && parse_u64(fields[0], v) &&
		       classify_twitter(fields[5]) != twitter_op::unknown;
	};
	if (std::all_of(lines.begin(), lines.end(), twitter))
		return "twitter";
	return looks_like_csv(lines) ? "csv" : "";
}

std::string choose_format(byte_stream &s, const std::string &path, const read_opts &o)
{
	if (!o.format.empty()) {
		for (const char *name : format_names)
			if (ascii_lower(o.format) == ascii_lower(name))
				return name;
		throw sim_error("unknown trace format " + quoted(o.format) + " (" + format_list +
				")");
	}
	size_t have = s.fill(sniff_bytes);
	if (have == 0)
		s.fail("no requests");
	std::string_view sample(s.data(), have);
	if (sample.substr(0, 8) == DSMEM_TRACE_MAGIC)
		return "dsmem";
	if (o.csv.id)	// columns given: the user says it is CSV
		return "csv";
	std::string format = format_by_name(path);
	if (format.empty())
		format = format_by_content(sample, have < sniff_bytes);
	if (format == "csv")
		s.fail("looks like CSV; give its columns with csv id=N[,time=N...]");
	bool binary = std::any_of(sample.begin(), sample.begin() + std::min<size_t>(have, 512),
				  [](unsigned char c) {
					  return c < 0x20 && c != '\n' && c != '\r' && c != '\t';
				  });
	// (a name saying text, as Caffeine's binary *.trace.xz do, is
	// overruled by the bytes)
	if ((format.empty() || format == "text") && binary) {
		// vscsi has no magic number either, but its traces are named
		// so (w01_vscsi1.vscsitrace): its reader checks the version
		if (ascii_lower(path.substr(path.find_last_of('/') + 1)).find("vscsi") !=
		    std::string::npos)
			return "vscsi";
		// binary records without a magic number (cache2k, scarab,
		// cloud-physics, vscsi): only the user knows which
		std::string head;
		for (size_t i = 0; i < std::min<size_t>(have, 8); i++) {
			char hex[4];
			std::snprintf(hex, sizeof(hex), " %02x",
				      static_cast<unsigned char>(sample[i]));
			head += hex;
		}
		// two whole records whose version bytes agree look like vscsi
		const char *p = sample.data();
		bool v2 = have >= 2 * vscsi_v2.rec && vscsi_is(vscsi_v2, p, have);
		bool v1 = have >= 2 * vscsi_v1.rec && vscsi_is(vscsi_v1, p, have);
		std::string hint = v2 || v1 ? std::string(" (its version bytes look like vscsi V") +
						      (v2 ? "2" : "1") + ")"
					    : "";
		s.fail("unknown trace format: a binary file starting with" + head +
		       " and no magic number known here" + hint + "; give its format with format " +
		       format_list);
	}
	if (format.empty())
		s.fail(std::string("unknown trace format (give one with format ") + format_list +
		       ")");
	return format;
}

// ---- csv column mapping ----------------------------------------------------

struct csv_map_parser {
	std::string_view spec;
	csv_map m;
	size_t pos = 0;

	[[noreturn]] void bad(const std::string &why) const
	{
		throw sim_error("csv columns " + quoted(spec) + ": " + why);
	}

	// the text up to the next ',' (or the end)
	std::string_view take_item()
	{
		size_t comma = std::min(spec.find(',', pos), spec.size());
		std::string_view item = spec.substr(pos, comma - pos);
		pos = comma + 1;
		return item;
	}

	// sep=C takes any one character, ',' included; or a name
	char take_sep()
	{
		if (pos < spec.size() && (pos + 1 == spec.size() || spec[pos + 1] == ',')) {
			char c = spec[pos];
			pos += 2;
			return c;
		}
		std::string_view name = take_item();
		if (name == "tab" || name == "\\t")
			return '\t';
		if (name == "space")
			return ' ';
		if (name == "comma")
			return ',';
		if (name == "semicolon")
			return ';';
		bad("sep=" + std::string(name) +
		    " is not one character (or tab, space, comma, semicolon)");
	}

	void set_column(std::string_view key, int &field)
	{
		std::string_view value = take_item();
		uint64_t col;
		if (!parse_u64(value, col) || col == 0 || col > 4096)
			bad(std::string(key) + "=" + std::string(value) + ": columns count from 1");
		if (field)
			bad(std::string(key) + " is given twice");
		field = static_cast<int>(col);
	}

	// libCacheSim's true/false (has-header=true, obj-id-is-num=1)
	bool take_bool(std::string_view key)
	{
		std::string_view value = take_item();
		if (value == "true" || value == "1")
			return true;
		if (value == "false" || value == "0")
			return false;
		bad(std::string(key) + "=" + std::string(value) + " is not true, false, 1 or 0");
	}

	// libCacheSim's -t names for the same columns
	static std::string_view our_key(std::string_view key)
	{
		if (key == "obj-id-col")
			return "id";
		if (key == "time-col")
			return "time";
		if (key == "obj-size-col")
			return "size";
		if (key == "op-col")
			return "op";
		if (key == "delimiter")
			return "sep";
		return key;
	}

	void item()
	{
		while (pos < spec.size() && spec[pos] == ' ')	// -t "a=1, b=2"
			pos++;
		size_t stop = std::min(spec.find_first_of("=,", pos), spec.size());
		std::string_view key = our_key(trim(spec.substr(pos, stop - pos)));
		bool has_value = stop < spec.size() && spec[stop] == '=';
		pos = stop + 1;
		if (key == "header" && !has_value) {
			m.header = true;
			return;
		}
		if ((key == "has-header" || key == "obj-id-is-num") && has_value) {
			bool on = take_bool(key);
			// numeric ids are kept and others hashed either way
			if (key == "has-header")
				m.header = on;
			return;
		}
		int *field = key == "id" ? &m.id : key == "time" ? &m.time : key == "size" ? &m.size
			   : key == "op" ? &m.op : nullptr;
		if (!field && key != "sep")
			bad(key.empty() ? std::string("an empty item")
					: "unknown key " + quoted(key) +
						  " (id, time, size, op, header, sep; or " +
						  "libCacheSim's obj-id-col, time-col, " +
						  "obj-size-col, op-col, delimiter, has-header, " +
						  "obj-id-is-num)");
		if (!has_value)
			bad(std::string(key) + " needs a value (" + std::string(key) + "=...)");
		if (field)
			set_column(key, *field);
		else
			m.sep = take_sep();
	}

	csv_map parse()
	{
		while (pos < spec.size())
			item();
		if (!m.id)
			bad("the id column is required (id=N)");
		const std::pair<const char *, int> cols[] = { { "id", m.id }, { "time", m.time },
							      { "size", m.size }, { "op", m.op } };
		for (size_t a = 0; a < 4; a++)
			for (size_t b = a + 1; b < 4; b++)
				if (cols[a].second && cols[a].second == cols[b].second)
					bad(std::string(cols[a].first) + " and " + cols[b].first +
					    " are both column " + std::to_string(cols[a].second));
		return m;
	}
};

}  // namespace

// ---- the interface -------------------------------------------------------------

void compute_next(trace &t)
{
	std::vector<int64_t> later(t.nobjects(), -1);
	t.next.resize(t.size());
	for (size_t i = t.size(); i-- > 0;) {
		int64_t &seen = later[t.ids[i]];
		t.next[i] = seen;
		seen = static_cast<int64_t>(i);
	}
}

void write_oracle(const trace &t, const std::string &path)
{
	// libCacheSim's layout, as read_oracle takes it; written in chunks so
	// that a 20M-request trace needs no 480 MB buffer
	constexpr size_t chunk = 65536;
	std::vector<char> buf;
	FILE *f = fopen(path.c_str(), "wbe");

	if (!f)
		throw sim_error(path + ": cannot write: " + strerror(errno));
	buf.reserve(chunk * oracle_rec);
	auto put = [&](uint64_t v, int n) {
		for (int k = 0; k < n; k++)
			buf.push_back(static_cast<char>(v >> (8 * k)));
	};
	bool ok = true;
	for (size_t i = 0; i < t.size() && ok; i++) {
		put(t.times_ns.empty() ? i : t.times_ns[i] / 1000000000, 4);
		put(t.keys[t.ids[i]], 8);
		put(t.size_of(i), 4);
		// logical time counts from 1: the next request's index plus
		// one, -1 for none
		put(t.next[i] < 0 ? uint64_t(-1) : uint64_t(t.next[i] + 1), 8);
		if (buf.size() == buf.capacity() || i + 1 == t.size()) {
			ok = fwrite(buf.data(), 1, buf.size(), f) == buf.size();
			buf.clear();
		}
	}
	int err = errno;
	if (fclose(f) || !ok)
		throw sim_error(path + ": cannot write: " + strerror(ok ? errno : err));
}

csv_map parse_csv_map(std::string_view spec)
{
	return csv_map_parser { spec, {} }.parse();
}

trace read_trace(const std::string &path, const read_opts &o)
{
	byte_stream s(path, o.format.empty());
	trace t;
	t.name = path;
	t.format = choose_format(s, path, o);
	if (t.format == "lirs")
		t.format = "text";
	if (t.format == "oracleGeneral")
		read_oracle(s, o, t);
	else if (t.format == "dsmem")
		read_dsmem(s, o, t);
	else if (t.format == "text" || t.format == "txt")
		read_text(s, o, t, t.format == "txt");
	else if (t.format == "twitter")
		read_twitter(s, o, t);
	else if (t.format == "arc")
		read_arc(s, o, t);
	else if (t.format == "cache2k")
		read_be_keys(s, o, t, 4, true);
	else if (t.format == "cloud-physics")
		read_be_keys(s, o, t, 4, false);
	else if (t.format == "scarab")
		read_be_keys(s, o, t, 8, false);
	else if (t.format == "vscsi")
		read_vscsi(s, o, t);
	else
		read_csv(s, o, t);
	if (t.ids.empty())
		s.fail("no requests");
	return t;
}

std::string ascii_lower(std::string_view s)
{
	std::string out(s);
	for (char &c : out)
		if (c >= 'A' && c <= 'Z')
			c = static_cast<char>(c - 'A' + 'a');
	return out;
}

const std::vector<std::string> &trace_formats()
{
	static const std::vector<std::string> names(std::begin(format_names),
						    std::end(format_names));
	return names;
}

const std::vector<std::string> &trace_compressions()
{
	static const std::vector<std::string> names = { "gzip", "zstd", "xz" };
	return names;
}

}  // namespace dssim
