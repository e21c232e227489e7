// SPDX-License-Identifier: BSD-2-Clause
// dssim's trace processing: see analyze.hpp.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "analyze.hpp"
#include "stack_distance.hpp"

namespace dssim {

namespace {

// Lines into a file through a buffer of our own: stdio's formatting would
// be most of the time for a trace of millions of requests.
class line_writer {
public:
	explicit line_writer(const std::string &path) : path_(path)
	{
		f_ = fopen(path.c_str(), "we");
		if (!f_)
			fail(errno);
		buf_.reserve(chunk + 64);
	}
	~line_writer()
	{
		if (f_)
			fclose(f_);
	}
	line_writer(const line_writer &) = delete;
	line_writer &operator=(const line_writer &) = delete;

	void put(std::string_view s) { buf_.append(s); }
	void put(uint64_t v)
	{
		char d[24];
		auto r = std::to_chars(d, d + sizeof(d), v);

		buf_.append(d, r.ptr);
	}
	void end_line()
	{
		buf_ += '\n';
		if (buf_.size() >= chunk)
			flush();
	}
	// close() reports what a failed flush at close time would hide
	void close()
	{
		flush();
		FILE *f = f_;

		f_ = nullptr;
		if (fclose(f))
			fail(errno);
	}

private:
	static constexpr size_t chunk = 1 << 20;

	void flush()
	{
		if (!buf_.empty() && fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
			fail(errno);
		buf_.clear();
	}
	[[noreturn]] void fail(int err) const
	{
		throw sim_error(path_ + ": cannot write: " + strerror(err));
	}

	std::string path_;
	FILE *f_ = nullptr;
	std::string buf_;
};

void write_csv(const trace &t, const std::string &path)
{
	line_writer w(path);

	w.put("time_ns,key,size,op");
	w.end_line();
	for (size_t i = 0; i < t.size(); i++) {
		w.put(t.times_ns.empty() ? 0 : t.times_ns[i]);
		w.put(",");
		w.put(t.keys[t.ids[i]]);
		w.put(",");
		w.put(uint64_t(t.size_of(i)));
		w.put(t.is_write(i) ? ",write" : ",read");
		w.end_line();
	}
	w.close();
}

void write_text(const trace &t, const std::string &path)
{
	line_writer w(path);

	for (size_t i = 0; i < t.size(); i++) {
		w.put(t.keys[t.ids[i]]);
		w.end_line();
	}
	w.close();
}

}  // namespace

void write_trace(const trace &t, const std::string &path, const std::string &format)
{
	std::string f = ascii_lower(format);

	if (f == "csv") {
		write_csv(t, path);
	} else if (f == "text") {
		write_text(t, path);
	} else if (f == "oraclegeneral") {
		if (t.next.size() == t.size()) {
			write_oracle(t, path);
			return;
		}
		// a filtered or sampled trace has no next: the writer needs it,
		// and only the fields it writes are worth a copy
		trace c;
		c.ids = t.ids;
		c.keys = t.keys;
		c.sizes = t.sizes;
		c.times_ns = t.times_ns;
		compute_next(c);
		write_oracle(c, path);
	} else {
		throw sim_error(path + ": unknown output format \"" + format +
				"\" (oracleGeneral, csv, text)");
	}
}

trace filter_trace(const trace &t, uint64_t from, uint64_t to, int op)
{
	constexpr uint32_t none = std::numeric_limits<uint32_t>::max();
	trace f;

	if (op < -1 || op > 1)
		throw sim_error("filter: op " + std::to_string(op) +
				" is not -1 (all), 0 (reads) or 1 (writes)");
	to = std::min<uint64_t>(to, t.size());
	f.name = t.name;
	f.format = t.format;

	std::vector<uint32_t> remap(t.nobjects(), none);
	for (uint64_t i = from; i < to; i++) {
		if (op >= 0 && t.is_write(i) != (op == 1))
			continue;
		uint32_t old = t.ids[i];
		uint32_t &id = remap[old];

		if (id == none) {
			id = f.nobjects();
			f.keys.push_back(t.keys[old]);
			if (!t.eids.empty())
				f.eids.push_back(t.eids[old]);
			if (!t.types.empty())
				f.types.push_back(t.types[old]);
		}
		f.ids.push_back(id);
		if (!t.sizes.empty())
			f.sizes.push_back(t.sizes[i]);
		if (!t.times_ns.empty())
			f.times_ns.push_back(t.times_ns[i]);
		if (!t.writes.empty())
			f.writes.push_back(t.writes[i]);
	}
	if (f.ids.empty())
		throw sim_error("filter keeps no request of " + t.name + " (requests " +
				std::to_string(from) + ".." + std::to_string(to) + " of " +
				std::to_string(t.size()) +
				(op < 0 ? "" : op ? ", writes" : ", reads") + ")");
	return f;
}

analysis analyze(const trace &t, size_t top_n, uint64_t window)
{
	const uint64_t n = t.size();
	const uint32_t nobj = t.nobjects();
	analysis a;

	a.requests = n;
	a.window = window ? window : std::max<uint64_t>(1, n / 100);

	std::vector<uint64_t> count(nobj, 0), obj_bytes(nobj, 0), hist;
	// wss: the window (numbered from 1) each object was last seen in, and
	// its size there, so a window counts an object once at its last size
	std::vector<uint64_t> seen_in(nobj, 0);
	std::vector<uint32_t> last_size(nobj, 0);
	stack_distance sd(t);
	wss_point cur;
	uint64_t win = 0, in_win = a.window;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t id = t.ids[i], size = t.size_of(i);
		uint64_t d = sd.next(i, id);

		a.bytes += size;
		count[id]++;
		obj_bytes[id] += size;
		if (!d) {
			a.cold++;
		} else {
			// bucket b holds 2^(b-1) < d <= 2^b
			size_t b = size_t(std::bit_width(d - 1));

			if (b >= hist.size())
				hist.resize(b + 1, 0);
			hist[b]++;
		}

		if (in_win == a.window) {
			if (win)
				a.wss.push_back(cur);
			cur = { i, 0, 0 };
			win++;
			in_win = 0;
		}
		in_win++;
		if (seen_in[id] != win) {
			seen_in[id] = win;
			cur.objects++;
			cur.bytes += size;
		} else {
			cur.bytes = cur.bytes - last_size[id] + size;
		}
		last_size[id] = size;
	}
	if (win)
		a.wss.push_back(cur);

	for (size_t b = 0; b < hist.size(); b++)
		a.reuse.emplace_back(uint64_t(1) << b, hist[b]);

	// a sampled trace keeps every key: count only the requested ones
	std::vector<uint32_t> ids;
	for (uint32_t id = 0; id < nobj; id++)
		if (count[id])
			ids.push_back(id);
	a.objects = ids.size();
	size_t k = std::min(top_n, ids.size());
	auto before = [&](uint32_t x, uint32_t y) {
		if (count[x] != count[y])
			return count[x] > count[y];
		return t.keys[x] < t.keys[y];
	};
	std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(), before);
	for (size_t j = 0; j < k; j++)
		a.top.push_back({ t.keys[ids[j]], count[ids[j]], obj_bytes[ids[j]] });
	return a;
}

}  // namespace dssim
