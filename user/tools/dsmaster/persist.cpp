// SPDX-License-Identifier: BSD-2-Clause
// The metadata log's two backends.
//
// Files: DIR/snapshot is replaced whole (tmp + fsync + rename + dir fsync);
// DIR/log is appended to, one fdatasync per record.  Only the last frame of
// the log may be torn (cut on open); a bad frame with data after it is
// damage (-EIO).  Both carry a
// generation: compaction writes snapshot generation g+1 and then empties
// the log and stamps it g+1, so a crash between the two leaves a log whose
// records the new snapshot already holds, and its older stamp says so.
//
// etcd: PREFIX/snapshot points at the snapshot (its generation, the last
// log sequence number it covers, its size and CRC; small ones inline) and
// PREFIX/log/<seq> are the records.  A large snapshot goes first in chunks
// under PREFIX/snapshot/<gen>/, each its own fenced Txn within etcd's
// request limit; the switch to it (pointer, old chunks and covered records
// deleted) is one small fenced Txn, so a reader sees the old state or the
// new, never a mix.
#include "persist.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace dsmem::store {

namespace {

struct crc_table {
	uint32_t t[256];
	constexpr crc_table() : t()
	{
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (c & 1 ? 0x82f63b78u : 0);
			t[i] = c;
		}
	}
};
constexpr crc_table crc_tab;

uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_tab.t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = static_cast<uint32_t>(c);
	while (len--)
		c32 = _mm_crc32_u8(c32, *p++);
	return c32;
}

bool have_sse42()
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = static_cast<const uint8_t *>(data);

	crc = ~crc;
#if defined(__x86_64__)
	static const bool hw = have_sse42();	// objects are big; the table does ~0.5 GB/s
	if (hw)
		return ~crc32c_sse42(crc, p, len);
#endif
	return ~crc32c_table(crc, p, len);
}

namespace {

std::string errstr(const std::string &what, int e)
{
	return what + ": " + strerror(e);
}

int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = static_cast<const char *>(buf);

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= static_cast<size_t>(n);
		off += n;
	}
	return 0;
}

int read_file(const std::string &path, std::string *out)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st)) {
		int e = errno;
		close(fd);
		return -e;
	}
	out->resize(static_cast<size_t>(st.st_size));
	size_t got = 0;
	while (got < out->size()) {
		ssize_t n = pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		got += static_cast<size_t>(n);
	}
	close(fd);
	return 0;
}

int (*dir_fsync_hook)(const char *dir) = nullptr;	// tests: fail it on purpose

}  // namespace

int mkdir_p(const std::string &path)
{
	for (size_t pos = 1; pos <= path.size(); pos++) {
		if (pos < path.size() && path[pos] != '/')
			continue;
		std::string part = path.substr(0, pos);
		if (mkdir(part.c_str(), 0755) == 0) {
			size_t slash = part.find_last_of('/');
			std::string parent = slash == 0 ? "/" : slash == std::string::npos ? "." : part.substr(0, slash);
			if (int ret = fsync_dir(parent))
				return ret;
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	return 0;
}

namespace {

template <typename T> void put_le(std::string *s, T v)
{
	s->append(reinterpret_cast<const char *>(&v), sizeof(v));	// x86/arm64: little endian
}

template <typename T> T get_le(const char *p)
{
	T v;
	memcpy(&v, p, sizeof(v));
	return v;
}

constexpr uint32_t kSnapMagic = 0x4e535344;	// "DSSN"
constexpr uint32_t kLogMagic = 0x474c5344;	// "DSLG"
constexpr uint32_t kFormat = 1;
constexpr size_t kSnapHeader = 4 + 4 + 8 + 8 + 4 + 4;	// magic format gen len crc pad
constexpr size_t kLogHeader = 4 + 4 + 8;		// magic format gen
constexpr size_t kFrameHeader = 4 + 4;			// len crc
constexpr uint32_t kMaxRecord = 256u << 20;		// a bigger length is a torn header

// What both backends count, under their lock: the snapshot's generation
// and size, and the records and bytes of the log after it.
class CountedLog : public MetaLog {
public:
	uint64_t records_since_snapshot() const override
	{
		std::lock_guard g(m_);
		return records_;
	}
	uint64_t bytes() const override
	{
		std::lock_guard g(m_);
		return snap_bytes_ + log_bytes_;
	}

protected:
	mutable std::mutex m_;
	uint64_t gen_ = 0;		// the snapshot's
	uint64_t snap_bytes_ = 0;
	uint64_t log_bytes_ = 0;
	uint64_t records_ = 0;		// in the log, after the snapshot
};

class FileLog : public CountedLog {
public:
	explicit FileLog(std::string dir) : dir_(std::move(dir)) {}
	~FileLog() override
	{
		if (log_fd_ >= 0)
			close(log_fd_);
		if (lock_fd_ >= 0)
			close(lock_fd_);	// drops the flock
	}

	int open_dir(std::string *err);
	int load(std::string *snapshot, std::vector<std::string> *records, std::string *err) override;
	int append(const std::string &record, std::string *err) override;
	int compact(std::string_view snapshot, std::string *err) override;
	std::string describe() const override { return "file:" + dir_; }

private:
	std::string path(const char *name) const { return dir_ + "/" + name; }
	int read_snapshot(std::string *data, std::string *err);
	int reset_log(std::string *err);
	int reset_covered_log(std::string *err);
	int scan_log(std::vector<std::string> *records, std::string *err);

	// gen_: the log's must match; log_bytes_: the end of the last good
	// record, where the next is written
	std::string dir_;
	int lock_fd_ = -1, log_fd_ = -1;
	bool log_stale_ = false;	// a compaction could not empty the log yet
	bool tail_dirty_ = false;	// a failed append's bytes may lie past log_bytes_
};

// data == nullptr: the header only (gen_, snap_bytes_).
int FileLog::read_snapshot(std::string *data, std::string *err)
{
	std::string buf;
	int ret = read_file(path("snapshot"), &buf);

	if (ret == -ENOENT) {
		gen_ = 0;
		snap_bytes_ = 0;
		if (data)
			data->clear();
		return 0;
	}
	if (ret) {
		*err = errstr(path("snapshot"), -ret);
		return ret;
	}
	if (buf.size() < kSnapHeader || get_le<uint32_t>(buf.data()) != kSnapMagic ||
	    get_le<uint32_t>(buf.data() + 4) != kFormat) {
		*err = path("snapshot") + ": not a dsmaster snapshot";
		return -EIO;
	}
	uint64_t gen = get_le<uint64_t>(buf.data() + 8), len = get_le<uint64_t>(buf.data() + 16);
	uint32_t crc = get_le<uint32_t>(buf.data() + 24);
	// written whole before its rename: a bad one is damage, not a crash
	if (len != buf.size() - kSnapHeader || crc32c(0, buf.data() + kSnapHeader, len) != crc) {
		*err = path("snapshot") + ": length or CRC mismatch (damaged)";
		return -EIO;
	}
	gen_ = gen;
	snap_bytes_ = buf.size();
	if (data)
		data->assign(buf, kSnapHeader);
	return 0;
}

int FileLog::reset_log(std::string *err)
{
	std::string hdr;

	put_le<uint32_t>(&hdr, kLogMagic);
	put_le<uint32_t>(&hdr, kFormat);
	put_le<uint64_t>(&hdr, gen_);
	int ret = ftruncate(log_fd_, 0) ? -errno : 0;
	if (!ret)
		ret = write_all(log_fd_, hdr.data(), hdr.size(), 0);
	if (!ret && fdatasync(log_fd_))
		ret = -errno;
	if (ret) {
		*err = errstr(path("log"), -ret);
		log_stale_ = true;
		return ret;
	}
	log_stale_ = false;
	tail_dirty_ = false;
	log_bytes_ = kLogHeader;
	records_ = 0;
	return 0;
}

// The log's records are all in the snapshot (its stamp is older): empty it,
// but only once the snapshot's rename is durable (a directory fsync that
// failed in compact(), or never ran before a crash, is done now).  Were the
// log emptied first, a crash could bring back the old snapshot with an
// empty log, and every record since it would be lost.
int FileLog::reset_covered_log(std::string *err)
{
	if (int ret = fsync_dir(dir_)) {
		*err = errstr(dir_ + ": making the new snapshot durable", -ret) +
		       " (the log is kept until it is)";
		log_stale_ = true;
		return ret;
	}
	return reset_log(err);
}

// Reads every good record; a torn or corrupt tail is cut off the file.
int FileLog::scan_log(std::vector<std::string> *records, std::string *err)
{
	std::string buf;
	int ret = read_file(path("log"), &buf);

	if (records)
		records->clear();
	if (ret) {
		*err = errstr(path("log"), -ret);
		return ret;
	}
	// shorter than a header: a crash while compaction emptied it
	if (buf.size() < kLogHeader)
		return reset_log(err);
	if (get_le<uint32_t>(buf.data()) != kLogMagic || get_le<uint32_t>(buf.data() + 4) != kFormat) {
		*err = path("log") + ": not a dsmaster log";
		return -EIO;
	}
	uint64_t gen = get_le<uint64_t>(buf.data() + 8);
	if (gen < gen_)
		return reset_covered_log(err);	// older than the snapshot: compaction's leftover
	if (gen > gen_) {
		*err = path("log") + ": generation " + std::to_string(gen) +
		       " is newer than the snapshot's " + std::to_string(gen_) + " (snapshot lost?)";
		return -EIO;
	}
	// Every append is one frame written at the end and fdatasync'ed before
	// the next, so a crash can spoil only the last frame: one that runs to
	// (or past) the end of the file, or zeros where the file grew without
	// its data.  That is a torn tail, cut off.  A bad frame with more data
	// after it is damage: refused (-EIO), never cut, since cutting would
	// drop acknowledged records.
	size_t pos = kLogHeader;
	uint64_t n = 0;
	while (pos < buf.size()) {
		size_t left = buf.size() - pos;
		const char *why = nullptr;
		bool torn = false;
		if (left < kFrameHeader) {
			torn = true;
		} else {
			uint32_t len = get_le<uint32_t>(buf.data() + pos);
			uint32_t crc = get_le<uint32_t>(buf.data() + pos + 4);
			if (len == 0 || len > kMaxRecord) {
				why = "a bad record length";
				torn = buf.find_first_not_of('\0', pos) == std::string::npos;
			} else if (len > left - kFrameHeader) {
				torn = true;	// runs past the end
			} else if (crc32c(0, buf.data() + pos + kFrameHeader, len) != crc) {
				why = "a CRC mismatch";
				torn = len == left - kFrameHeader;	// the last frame
			} else {
				if (records)
					records->emplace_back(buf, pos + kFrameHeader, len);
				pos += kFrameHeader + len;
				n++;
				continue;
			}
		}
		if (!torn) {
			*err = path("log") + ": record " + std::to_string(n + 1) + " at offset " +
			       std::to_string(pos) + " has " + why + " and " + std::to_string(left) +
			       " bytes follow it: the log is damaged (not a torn tail; not cut)";
			if (records)
				records->clear();
			return -EIO;
		}
		break;
	}
	if (pos < buf.size()) {
		// the append that was in flight when we crashed never returned 0
		if (ftruncate(log_fd_, static_cast<off_t>(pos)) || fdatasync(log_fd_)) {
			*err = errstr(path("log") + ": cutting its torn tail", errno);
			return -EIO;
		}
	}
	tail_dirty_ = false;
	log_bytes_ = pos;
	records_ = n;
	return 0;
}

int FileLog::open_dir(std::string *err)
{
	if (int ret = mkdir_p(dir_)) {
		*err = errstr(dir_, -ret);
		return ret;
	}
	lock_fd_ = open(path("lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock_fd_ < 0) {
		*err = errstr(path("lock"), errno);
		return -EIO;
	}
	if (flock(lock_fd_, LOCK_EX | LOCK_NB)) {
		int e = errno;
		*err = e == EWOULDBLOCK ? dir_ + ": in use by another master" : errstr(path("lock"), e);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	log_fd_ = open(path("log").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (log_fd_ < 0) {
		*err = errstr(path("log"), errno);
		return -EIO;
	}
	// lock and log may be new: their names must be durable before a
	// record in the log counts as durable (also redoes a directory fsync
	// a compaction could not do)
	if (int ret = fsync_dir(dir_)) {
		*err = errstr(dir_, -ret);
		return ret;
	}
	std::lock_guard g(m_);
	if (int ret = read_snapshot(nullptr, err))
		return ret;
	// a torn tail is cut now, so appends never land behind garbage
	return scan_log(nullptr, err);
}

int FileLog::load(std::string *snapshot, std::vector<std::string> *records, std::string *err)
{
	std::lock_guard g(m_);

	if (int ret = read_snapshot(snapshot, err))
		return ret;
	return scan_log(records, err);
}

int FileLog::append(const std::string &record, std::string *err)
{
	std::lock_guard g(m_);

	if (record.empty() || record.size() > kMaxRecord) {
		*err = "metadata record of " + std::to_string(record.size()) + " bytes";
		return -EINVAL;
	}
	if (log_stale_) {
		if (int ret = reset_covered_log(err))
			return ret;
	}
	if (tail_dirty_) {
		// a frame shorter than the failed one must not leave its
		// remains behind it (they would read as damage)
		if (ftruncate(log_fd_, static_cast<off_t>(log_bytes_)) || fdatasync(log_fd_)) {
			*err = errstr(path("log") + ": cutting a failed append", errno);
			return -EIO;
		}
		tail_dirty_ = false;
	}
	std::string frame;
	frame.reserve(kFrameHeader + record.size());
	put_le<uint32_t>(&frame, static_cast<uint32_t>(record.size()));
	put_le<uint32_t>(&frame, crc32c(0, record.data(), record.size()));
	frame += record;
	int ret = write_all(log_fd_, frame.data(), frame.size(), static_cast<off_t>(log_bytes_));
	if (!ret && fdatasync(log_fd_))
		ret = -errno;
	if (ret) {
		*err = errstr(path("log"), -ret);
		// a partial frame would read as a torn tail; cut it now anyway
		if (ftruncate(log_fd_, static_cast<off_t>(log_bytes_)) || fdatasync(log_fd_))
			tail_dirty_ = true;
		return ret;
	}
	log_bytes_ += frame.size();
	records_++;
	return 0;
}

int FileLog::compact(std::string_view snapshot, std::string *err)
{
	std::lock_guard g(m_);
	std::string tmp = path("snapshot.tmp"), hdr;

	put_le<uint32_t>(&hdr, kSnapMagic);
	put_le<uint32_t>(&hdr, kFormat);
	put_le<uint64_t>(&hdr, gen_ + 1);
	put_le<uint64_t>(&hdr, snapshot.size());
	put_le<uint32_t>(&hdr, crc32c(0, snapshot.data(), snapshot.size()));
	put_le<uint32_t>(&hdr, 0);
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		*err = errstr(tmp, errno);
		return -EIO;
	}
	int ret = write_all(fd, hdr.data(), hdr.size(), 0);
	if (!ret)
		ret = write_all(fd, snapshot.data(), snapshot.size(), static_cast<off_t>(hdr.size()));
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && rename(tmp.c_str(), path("snapshot").c_str()))
		ret = -errno;
	if (ret) {
		*err = errstr(tmp, -ret);
		unlink(tmp.c_str());
		return ret;
	}
	// From the rename on, the snapshot in the directory is generation
	// gen_ + 1 and holds every record in the log.  If the directory fsync
	// fails, the rename may not survive a crash, so the log (stamped with
	// the old generation, which marks it as covered) is kept intact; every
	// append (and a reopen) first retries the directory fsync and empties
	// the log only once it succeeds.  Until then appends fail: a record
	// appended to the old-stamped log would be dropped as covered.
	gen_++;
	snap_bytes_ = hdr.size() + snapshot.size();
	log_stale_ = true;
	if ((ret = fsync_dir(dir_))) {
		*err = errstr(dir_, -ret) + " (new snapshot written; the log is kept until "
		       "the directory fsync succeeds)";
		return ret;
	}
	// failing here is safe: the log's old stamp marks its records as
	// covered, and the next append retries the reset first
	return reset_log(err);
}

// ---- etcd ----

std::string seq_key(uint64_t seq)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%020" PRIu64, seq);
	return buf;
}

constexpr size_t kInlineSnapshot = 512 * 1024;	// bigger ones go in chunks
const char kPointerTag[] = "dsmem-snapshot";

struct SnapPointer {
	uint64_t gen = 0, seq = 0, parts = 0, bytes = 0;
	uint32_t crc = 0;
	std::string inline_data;
};

std::string encode_pointer(const SnapPointer &p, std::string_view data_if_inline)
{
	char head[160];
	snprintf(head, sizeof(head), "%s 1 gen=%" PRIu64 " seq=%" PRIu64 " parts=%" PRIu64
		 " bytes=%" PRIu64 " crc=%08x\n", kPointerTag, p.gen, p.seq, p.parts, p.bytes, p.crc);
	return std::string(head).append(data_if_inline);
}

bool decode_pointer(const std::string &v, SnapPointer *p)
{
	size_t nl = v.find('\n');
	if (nl == std::string::npos)
		return false;
	std::string head = v.substr(0, nl);
	char tag[32];
	unsigned format;
	if (sscanf(head.c_str(), "%31s %u gen=%" SCNu64 " seq=%" SCNu64 " parts=%" SCNu64
		   " bytes=%" SCNu64 " crc=%x", tag, &format, &p->gen, &p->seq, &p->parts, &p->bytes,
		   &p->crc) != 7 || strcmp(tag, kPointerTag) || format != 1)
		return false;
	p->inline_data = v.substr(nl + 1);
	return true;
}

class EtcdLog : public CountedLog {
public:
	EtcdLog(std::shared_ptr<EtcdClient> etcd, std::string prefix, std::string fence_key,
		int64_t fence_rev, int append_tries)
		: etcd_(std::move(etcd)), prefix_(std::move(prefix)), fence_key_(std::move(fence_key)),
		  fence_rev_(fence_rev), append_tries_(std::max(1, append_tries))
	{
		while (!prefix_.empty() && prefix_.back() == '/')
			prefix_.pop_back();
	}

	int load(std::string *snapshot, std::vector<std::string> *records, std::string *err) override;
	int append(const std::string &record, std::string *err) override;
	int compact(std::string_view snapshot, std::string *err) override;
	std::string describe() const override { return "etcd:" + etcd_->endpoints() + prefix_; }

private:
	std::string pointer_key() const { return prefix_ + "/snapshot"; }
	std::string chunks_prefix() const { return prefix_ + "/snapshot/"; }
	std::string gen_prefix(uint64_t gen) const { return chunks_prefix() + seq_key(gen) + "/"; }
	std::string log_prefix() const { return prefix_ + "/log/"; }
	int fenced(const std::vector<EtcdOp> &ops, std::string *err);
	int settle(std::string *err);

	std::shared_ptr<EtcdClient> etcd_;
	std::string prefix_, fence_key_;
	int64_t fence_rev_;
	int append_tries_;
	uint64_t next_seq_ = 1;
	bool unsure_ = false;	// an append failed ambiguously: read log/next_seq_ first
};

int EtcdLog::load(std::string *snapshot, std::vector<std::string> *records, std::string *err)
{
	std::lock_guard g(m_);
	std::vector<EtcdKV> kvs;
	int64_t rev = 0;
	SnapPointer p;
	std::string data;

	if (int ret = etcd_->range_at(pointer_key(), "", 0, &kvs, &rev, err))
		return ret;
	uint64_t snap_bytes = 0;
	if (!kvs.empty()) {
		if (!decode_pointer(kvs[0].value, &p)) {
			*err = "etcd " + pointer_key() + ": not a dsmaster snapshot pointer";
			return -EIO;
		}
		snap_bytes = kvs[0].value.size();
		if (p.parts == 0) {
			data = std::move(p.inline_data);
		} else {
			std::vector<EtcdKV> chunks;
			std::string gp = gen_prefix(p.gen);
			if (int ret = etcd_->range_at(gp, etcd_prefix_end(gp), rev, &chunks, nullptr, err))
				return ret;
			if (chunks.size() != p.parts) {
				*err = "etcd " + gp + ": " + std::to_string(chunks.size()) + " chunks, want " +
				       std::to_string(p.parts);
				return -EIO;
			}
			for (const EtcdKV &c : chunks) {
				data += c.value;
				snap_bytes += c.value.size();
			}
		}
		if (data.size() != p.bytes || crc32c(0, data.data(), data.size()) != p.crc) {
			*err = "etcd " + pointer_key() + ": snapshot length or CRC mismatch";
			return -EIO;
		}
	}
	std::vector<EtcdKV> log;
	if (int ret = etcd_->range_at(log_prefix(), etcd_prefix_end(log_prefix()), rev, &log, nullptr, err))
		return ret;
	std::vector<std::string> recs;
	uint64_t next = p.seq + 1, log_bytes = 0;
	for (EtcdKV &kv : log) {
		uint64_t seq = strtoull(kv.key.c_str() + log_prefix().size(), nullptr, 10);
		if (seq < next)
			continue;	// covered by the snapshot (not deleted by hand)
		if (seq != next) {
			*err = "etcd " + log_prefix() + ": record " + std::to_string(next) + " missing";
			return -EIO;
		}
		log_bytes += kv.value.size();
		recs.push_back(std::move(kv.value));
		next++;
	}
	gen_ = p.gen;
	next_seq_ = next;
	unsure_ = false;	// next_seq_ read afresh; a late commit still fails the compare
	records_ = recs.size();
	snap_bytes_ = snap_bytes;
	log_bytes_ = log_bytes;
	if (snapshot)
		*snapshot = std::move(data);
	if (records)
		*records = std::move(recs);
	return 0;
}

int EtcdLog::fenced(const std::vector<EtcdOp> &ops, std::string *err)
{
	// revision 0 would match an absent leader key: not a leader's fence
	if (fence_rev_ <= 0) {
		*err = "etcd log " + prefix_ + ": not the leader (no fence revision)";
		return -ESTALE;
	}
	return etcd_->fenced_ops(fence_key_, fence_rev_, ops, err);
}

// After a failed Txn (a timeout, a lost connection: it may still commit
// later) the next number is not used again until it has been read back:
// present means the failed record did commit after all, and this master's
// state, which never applied it, is no longer the log's (-ESTALE: step down
// and replay).  Absent, the number is used again, and the create_revision
// == 0 compare on it keeps a late commit of the failed Txn from
// overwriting the new record (and the new one from overwriting the late
// one): whichever lands second fails.
int EtcdLog::settle(std::string *err)
{
	if (!unsure_)
		return 0;
	EtcdKV kv;
	std::string key = log_prefix() + seq_key(next_seq_);
	int ret = etcd_->get(key, &kv, err);
	if (ret == -ENOENT) {
		unsure_ = false;
		return 0;
	}
	if (ret)
		return ret;
	*err = "etcd " + key + ": a record whose append failed committed after all; "
	       "this master must replay the log";
	return -ESTALE;
}

/*
 * A Txn that fails without a definite answer (its deadline passed because
 * this master was frozen or etcd was slow; a connection dropped) is
 * settled at once by reading its number back, and tried again while it
 * is free, up to append_tries_ times.  A master that a stall pushed past
 * etcd's deadline then goes on leading instead of stepping down and
 * handing its clients a needless failover.  The absent-compare keeps a
 * late commit of an earlier try and a later try from both landing; our
 * own record found there means one of them did.
 */
int EtcdLog::append(const std::string &record, std::string *err)
{
	std::lock_guard g(m_);
	std::string key = log_prefix() + seq_key(next_seq_);
	std::vector<EtcdOp> ops = { { EtcdOp::Put, key, record, "", 0 } };

	if (fence_rev_ <= 0)
		return fenced(ops, err);
	if (int ret = settle(err))
		return ret;
	for (int tries = 1;; tries++) {
		int ret = etcd_->fenced_ops_if_absent(fence_key_, fence_rev_, { key }, ops, err);
		if (!ret)
			break;
		// -ESTALE on a first try is definite: nothing was written
		if (ret == -ESTALE && tries == 1)
			return ret;
		EtcdKV kv;
		std::string why;
		int got = etcd_->get(key, &kv, &why);
		if (got == 0 && kv.value == record)
			break;		// an earlier try committed after all
		if (got == 0) {
			*err = "etcd " + key + ": another record holds this master's next number; "
			       "this master must replay the log";
			return -ESTALE;
		}
		// fenced out with the number free: another master leads, and
		// no earlier try of ours can commit any more (the fence moved)
		if (ret == -ESTALE && got == -ENOENT)
			return ret;
		if (got != -ENOENT || tries >= append_tries_) {
			unsure_ = true;
			return ret;
		}
	}
	next_seq_++;
	records_++;
	log_bytes_ += record.size();
	return 0;
}

int EtcdLog::compact(std::string_view snapshot, std::string *err)
{
	std::lock_guard g(m_);
	SnapPointer p;

	// a snapshot covering up to next_seq_ - 1 is only right if that is
	// where the log ends
	if (fence_rev_ > 0) {
		if (int ret = settle(err))
			return ret;
	}
	p.gen = gen_ + 1;
	p.seq = next_seq_ - 1;
	p.bytes = snapshot.size();
	p.crc = crc32c(0, snapshot.data(), snapshot.size());
	std::string gp = gen_prefix(p.gen);
	uint64_t stored = 0;
	if (snapshot.size() > kInlineSnapshot) {
		p.parts = (snapshot.size() + kEtcdSnapshotChunk - 1) / kEtcdSnapshotChunk;
		// leftovers of a compaction that died here before (etcd refuses
		// a put into a range the same Txn deletes, so on their own)
		std::vector<EtcdOp> clear = { { EtcdOp::Delete, gp, "", etcd_prefix_end(gp), 0 } };
		if (int ret = fenced(clear, err))
			return ret;
		for (uint64_t i = 0; i < p.parts; i++) {
			char part[24];
			snprintf(part, sizeof(part), "%010" PRIu64, i);
			std::vector<EtcdOp> ops = { { EtcdOp::Put, gp + part,
				std::string(snapshot.substr(i * kEtcdSnapshotChunk, kEtcdSnapshotChunk)), "", 0 } };
			if (int ret = fenced(ops, err))
				return ret;
		}
		stored = snapshot.size();
	}
	std::string pointer = encode_pointer(p, p.parts ? "" : snapshot);
	std::string cp = chunks_prefix();
	std::vector<EtcdOp> ops = { { EtcdOp::Put, pointer_key(), pointer, "", 0 } };
	// every other generation's chunks (older ones, dead attempts) go
	if (p.parts) {
		ops.push_back({ EtcdOp::Delete, cp, "", gp, 0 });
		ops.push_back({ EtcdOp::Delete, etcd_prefix_end(gp), "", etcd_prefix_end(cp), 0 });
	} else {
		ops.push_back({ EtcdOp::Delete, cp, "", etcd_prefix_end(cp), 0 });
	}
	ops.push_back({ EtcdOp::Delete, log_prefix(), "", log_prefix() + seq_key(next_seq_), 0 });
	if (int ret = fenced(ops, err))
		return ret;
	gen_ = p.gen;
	records_ = 0;
	log_bytes_ = 0;
	snap_bytes_ = pointer.size() + stored;
	return 0;
}

}  // namespace

int fsync_dir(const std::string &dir)
{
	if (dir_fsync_hook)
		return dir_fsync_hook(dir.c_str());
	int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int ret = fsync(fd) ? -errno : 0;
	close(fd);
	return ret;
}

void set_dir_fsync_hook_for_test(int (*hook)(const char *dir))
{
	dir_fsync_hook = hook;
}

std::unique_ptr<MetaLog> open_file_log(const std::string &dir, std::string *err)
{
	auto log = std::make_unique<FileLog>(dir);

	if (log->open_dir(err))
		return nullptr;
	return log;
}

std::unique_ptr<MetaLog> open_etcd_log(std::shared_ptr<EtcdClient> etcd, const std::string &prefix,
				       const std::string &fence_key, int64_t fence_rev, std::string *err,
				       int append_tries)
{
	auto log = std::make_unique<EtcdLog>(std::move(etcd), prefix, fence_key, fence_rev,
					     append_tries);

	// learn where the log ends, so an append before any load is numbered right
	if (log->load(nullptr, nullptr, err))
		return nullptr;
	return log;
}

}  // namespace dsmem::store
