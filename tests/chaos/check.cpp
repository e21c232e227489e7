// SPDX-License-Identifier: BSD-2-Clause
// The checker: see docs/chaos.md for what it decides and how.
//
// Per key:
//
// 1. Reads that are impossible on their face (a value nobody wrote, or
//    whose put failed, or began after the read ended; a version other
//    than the put's) and two puts with one version.
// 2. Witnesses: pairs of operations that no linearization can order (a
//    read older than a put acknowledged before it began, a read older than
//    a read that ended before it began, a value deleted then read again, a
//    key found empty after an acknowledged put with no delete that could
//    come between, versions going backwards in real time, a value found
//    before any put began).  Each is a proof; they are found with prefix
//    maxima over the operations sorted by time, in O(n log n).
// 3. Otherwise a search over linearizations (Wing & Gong, with Lowe's
//    memoization of the set of operations linearized and the register's
//    state, as Knossos and Porcupine do), pruned by rules that keep it
//    exact:
//    - a put happens once, so its value is there for one stretch of time,
//      which every read of it must overlap: only two of its reads matter,
//      the one that returns first (the put comes before it) and the one
//      invoked last (the value lasts until it); the rest are left out;
//    - a read that may come next and matches the state is taken at once
//      (it changes nothing, and taking it early never hurts);
//    - with versions, puts take effect in version order, so the only put
//      that may come next is the one with the next version;
//    - a value is not overwritten while a read of it is still to come;
//    - of the deletes that may come next, only the one that must return
//      first is tried (they are interchangeable otherwise);
//    - an operation with no known outcome (info) that nobody observed is
//      a token: an unobserved put is used only right before a read or a
//      delete that needs a value there, an unobserved delete only right
//      before a read that needs none; tokens are interchangeable, so they
//      are used in the order of their invocations and the state keeps only
//      how many were, and a state that used no more tokens of each kind
//      than one already tried covers it.
//    The search gives up after options::max_steps steps or max_memo_bytes
//    of memo (the key is then undecided).
#include "check.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

namespace dschaos {

namespace {

// ---------------------------------------------------------------- words

std::string secs(int64_t t, int64_t t0)
{
	char b[48];
	std::snprintf(b, sizeof(b), "%.6f s", static_cast<double>(t - t0) / 1e9);
	return b;
}

std::string quoted(const std::string &key)
{
	std::string s = "\"";
	for (char c : key.substr(0, 80)) {
		if (c == '"' || c == '\\')
			s += '\\';
		if (static_cast<unsigned char>(c) < 0x20) {
			char b[8];
			std::snprintf(b, sizeof(b), "\\x%02x", static_cast<unsigned char>(c));
			s += b;
		} else {
			s += c;
		}
	}
	return s + (key.size() > 80 ? "...\"" : "\"");
}

std::string describe(const op &o, int64_t t0)
{
	std::string s = fn_name(o.f);
	if (o.f == fn::put)
		s += " of value " + std::to_string(o.value);
	s += " by process " + std::to_string(o.process) + " (line " + std::to_string(o.line) + ")";
	if (o.type == outcome::info) {
		s += ", invoked at " + secs(o.call, t0) + ", outcome unknown";
		if (!o.error.empty())
			s += " (" + o.error + ")";
		return s;
	}
	char span[96];
	std::snprintf(span, sizeof(span), ", %.6f to %.6f s", static_cast<double>(o.call - t0) / 1e9,
		      static_cast<double>(o.ret - t0) / 1e9);
	s += span;
	if (o.type == outcome::fail)
		return s + ", failed" + (o.error.empty() ? "" : " (" + o.error + ")");
	const std::string ver = o.has_version ? " (version " + std::to_string(o.version) + ")" : "";
	switch (o.f) {
	case fn::put:
		return s + ", acknowledged" + (o.has_version ? " with version " + std::to_string(o.version) : "");
	case fn::get:
		return s + (o.found ? ", read value " + std::to_string(o.value) + ver : ", found no value");
	case fn::exist:
		return s + (o.found ? ", found the key" + ver : ", found no key");
	case fn::del:
		return s + (o.found ? ", deleted the value" : ", found nothing to delete");
	}
	return s;
}

// ---------------------------------------------------------------- the problem

// read_unknown: an exist that found a version no put is known to have:
// the value of a put whose version is unknown.
enum class kind : uint8_t { put, del, read_put, read_absent, read_present, read_unknown };

// An operation of the search.  put: the index of the put it writes
// (read_put: reads) in problem::puts.
struct lop {
	kind k;
	int64_t call, ret;
	int32_t put;
	uint32_t src;	// its op in the history
};

struct kput {
	uint32_t src;
	bool known = false;	// its version is known (acknowledged, or read)
	int64_t version = -1;
	uint32_t version_from = 0;	// the op that told the version
	bool read = false;
	int32_t rank = -1;	// among the puts of known version, by version
	int32_t lop = -1;	// -1: failed, or a token
};

struct token {
	int64_t call;
	uint32_t src;
};

struct finding {
	int64_t from = 0, to = 0;
	std::vector<std::string> why;
};

struct problem {
	std::vector<lop> ops;		// by invocation
	std::vector<lop> search;	// the same, but two reads per put at most
	std::vector<kput> puts;
	std::vector<token> del_tokens;	// info deletes, by invocation
	std::vector<token> put_tokens;	// info puts nobody read, by invocation
	std::vector<finding> findings;	// violations seen without searching
	std::vector<uint32_t> bad;	// gets whose bytes failed their checksum
	// the read each get or exist became: history op -> its index in ops
	std::unordered_map<uint32_t, int32_t> read_of;
};

// Reads whose value is impossible on their face, duplicated values and
// versions, and the search's operations.
problem prepare(const history &h, const std::vector<uint32_t> &idx, const options &opt)
{
	problem p;
	const int64_t t0 = h.t0;
	std::unordered_map<uint64_t, int32_t> by_value;

	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (o.f != fn::put)
			continue;
		auto [it, fresh] = by_value.emplace(o.value, static_cast<int32_t>(p.puts.size()));
		if (!fresh)
			throw history_error(o.line, "value " + std::to_string(o.value) + " is put to key " +
						    quoted(o.key) + " again (first on line " +
						    std::to_string(h.ops[p.puts[it->second].src].line) +
						    "): values must be unique per key");
		kput k;
		k.src = i;
		if (o.type == outcome::ok && opt.versions) {
			if (!o.has_version)
				throw history_error(o.done_line, "an acknowledged put without a \"version\" "
								 "(check with --no-versions to ignore versions)");
			k.known = true;
			k.version = o.version;
			k.version_from = i;
		}
		p.puts.push_back(k);
	}

	auto bad_read = [&](const op &o, const std::string &why) {
		finding f;
		f.from = o.call;
		f.to = o.ret;
		f.why.push_back(why);
		p.findings.push_back(std::move(f));
	};
	// gets first: they name the value, and tell the versions of puts
	// whose outcome is unknown.  (op, put); -1: absent, -2: present,
	// -3: a value of unknown version
	std::vector<std::pair<uint32_t, int32_t>> reads;
	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (o.type != outcome::ok || o.f != fn::get)
			continue;
		if (!o.found) {
			reads.emplace_back(i, -1);
			continue;
		}
		if (!o.checksum_ok) {
			p.bad.push_back(i);
			continue;
		}
		auto it = by_value.find(o.value);
		if (it == by_value.end()) {
			bad_read(o, "read of a value never written: the " + describe(o, t0) +
					    ", but no put of key " + quoted(o.key) + " wrote value " +
					    std::to_string(o.value) + ".");
			continue;
		}
		kput &k = p.puts[it->second];
		const op &w = h.ops[k.src];
		if (w.type == outcome::fail) {
			bad_read(o, "read of a value whose put failed: the " + describe(o, t0) + ", but the " +
					    describe(w, t0) + ".");
			continue;
		}
		if (w.call > o.ret) {
			bad_read(o, "read from the future: the " + describe(o, t0) + ", before the " +
					    describe(w, t0) + " began.");
			continue;
		}
		if (opt.versions && o.has_version) {
			if (!k.known) {
				k.known = true;
				k.version = o.version;
				k.version_from = i;
			} else if (k.version != o.version) {
				const op &v = h.ops[k.version_from];
				bad_read(o, "wrong version: the " + describe(o, t0) + ", but " +
						    (k.version_from == k.src ? "the " + describe(w, t0)
									     : "the " + describe(v, t0) + " before") +
						    ".");
				continue;
			}
		}
		k.read = true;
		reads.emplace_back(i, it->second);
	}
	// exist names a version at most
	std::unordered_map<int64_t, int32_t> by_version;
	for (size_t k = 0; k < p.puts.size(); k++)
		if (p.puts[k].known)
			by_version.emplace(p.puts[k].version, static_cast<int32_t>(k));
	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (o.type != outcome::ok || o.f != fn::exist)
			continue;
		int32_t r = o.found ? -2 : -1;
		if (o.found && opt.versions && o.has_version) {
			auto it = by_version.find(o.version);
			if (it != by_version.end()) {
				r = it->second;
				p.puts[r].read = true;
			} else {
				r = -3;
			}
		}
		reads.emplace_back(i, r);
	}

	// versions: one put each, in one order
	std::vector<int32_t> known;
	for (size_t k = 0; k < p.puts.size(); k++)
		if (p.puts[k].known && h.ops[p.puts[k].src].type != outcome::fail)
			known.push_back(static_cast<int32_t>(k));
	std::stable_sort(known.begin(), known.end(), [&](int32_t a, int32_t b) {
		return p.puts[a].version < p.puts[b].version;
	});
	for (size_t r = 0; r < known.size(); r++) {
		p.puts[known[r]].rank = static_cast<int32_t>(r);
		if (r && p.puts[known[r]].version == p.puts[known[r - 1]].version) {
			const op &a = h.ops[p.puts[known[r - 1]].src], &b = h.ops[p.puts[known[r]].src];
			finding f;
			f.from = std::min(a.call, b.call);
			f.to = std::max(std::min(a.ret, b.ret), f.from);
			f.why.push_back("one version for two puts: the " + describe(a, t0) + ", and the " +
					describe(b, t0) + ", both have version " +
					std::to_string(p.puts[known[r]].version) + ".");
			p.findings.push_back(std::move(f));
		}
	}

	// the operations
	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (o.type == outcome::fail)
			continue;
		switch (o.f) {
		case fn::put: {
			int32_t k = by_value[o.value];
			if (o.type == outcome::ok || p.puts[k].read) {
				p.puts[k].lop = static_cast<int32_t>(p.ops.size());
				p.ops.push_back({kind::put, o.call, o.ret, k, i});
			} else {
				p.put_tokens.push_back({o.call, i});
			}
			break;
		}
		case fn::del:
			if (o.type == outcome::info)
				p.del_tokens.push_back({o.call, i});
			else
				p.ops.push_back({o.found ? kind::del : kind::read_absent, o.call, o.ret, -1, i});
			break;
		case fn::get:
		case fn::exist:
			break;
		}
	}
	for (auto [i, r] : reads) {
		const op &o = h.ops[i];
		kind k = r >= 0 ? kind::read_put : r == -1 ? kind::read_absent
				: r == -2 ? kind::read_present : kind::read_unknown;
		p.read_of[i] = static_cast<int32_t>(p.ops.size());
		p.ops.push_back({k, o.call, o.ret, r >= 0 ? r : -1, i});
	}
	// by invocation, and the indices that point into ops follow
	std::vector<int32_t> order(p.ops.size());
	for (size_t i = 0; i < order.size(); i++)
		order[i] = static_cast<int32_t>(i);
	std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
		const lop &x = p.ops[a], &y = p.ops[b];
		return x.call != y.call ? x.call < y.call : x.src < y.src;
	});
	std::vector<int32_t> where(order.size());
	std::vector<lop> sorted;
	sorted.reserve(order.size());
	for (size_t i = 0; i < order.size(); i++) {
		where[order[i]] = static_cast<int32_t>(i);
		sorted.push_back(p.ops[order[i]]);
	}
	p.ops = std::move(sorted);
	for (auto &k : p.puts)
		if (k.lop >= 0)
			k.lop = where[k.lop];
	for (auto &[i, l] : p.read_of)
		l = where[l];

	// the search's: of the reads of each put, the one that returns first
	// and the one invoked last
	std::vector<int32_t> first(p.puts.size(), -1), last(p.puts.size(), -1);
	for (size_t i = 0; i < p.ops.size(); i++) {
		const lop &o = p.ops[i];
		if (o.k != kind::read_put)
			continue;
		int32_t &f = first[o.put], &l = last[o.put];
		if (f < 0 || o.ret < p.ops[f].ret)
			f = static_cast<int32_t>(i);
		if (l < 0 || o.call >= p.ops[l].call)
			l = static_cast<int32_t>(i);
	}
	for (size_t i = 0; i < p.ops.size(); i++) {
		const lop &o = p.ops[i];
		if (o.k != kind::read_put || first[o.put] == static_cast<int32_t>(i) ||
		    last[o.put] == static_cast<int32_t>(i))
			p.search.push_back(o);
	}
	return p;
}

// ---------------------------------------------------------------- witnesses

// The greatest value over the entries whose time is before a bound.
class prefix_max {
public:
	void add(int64_t t, int64_t value, int32_t who) { e_.push_back({t, value, who}); }
	void build()
	{
		std::sort(e_.begin(), e_.end(), [](const entry &a, const entry &b) { return a.t < b.t; });
		for (size_t i = 1; i < e_.size(); i++)
			if (e_[i - 1].value > e_[i].value) {
				e_[i].value = e_[i - 1].value;
				e_[i].who = e_[i - 1].who;
			}
	}
	// the greatest value among the entries with t < bound (t <= bound
	// with inclusive), and whose it is (-1: a token); false when none
	bool before(int64_t bound, int64_t *value, int32_t *who, bool inclusive = false) const
	{
		auto it = inclusive ? std::upper_bound(e_.begin(), e_.end(), bound,
						       [](int64_t x, const entry &e) { return x < e.t; })
				    : std::lower_bound(e_.begin(), e_.end(), bound,
						       [](const entry &e, int64_t x) { return e.t < x; });
		if (it == e_.begin())
			return false;
		--it;
		*value = it->value;
		*who = it->who;
		return true;
	}

private:
	struct entry {
		int64_t t, value;
		int32_t who;
	};
	std::vector<entry> e_;
};

std::vector<finding> witnesses(const history &h, const problem &p, const options &opt)
{
	const auto &ops = p.ops;
	const int64_t t0 = h.t0;
	auto desc = [&](const lop &o) { return describe(h.ops[o.src], t0); };
	auto known = [&](const lop &o) { return opt.versions && p.puts[o.put].known; };
	auto version = [&](const lop &o) { return p.puts[o.put].version; };

	// puts by return: the greatest version, the latest invocation;
	// reads of a value by return: the same of the put read; deletes and
	// empty reads by return: the latest invocation; deletes (tokens too) by
	// invocation: the latest return
	prefix_max put_version, put_call, read_version, read_put_call, gone_call, del_ret;
	int64_t first_put = never, first_unknown_put = never;
	for (size_t i = 0; i < ops.size(); i++) {
		const lop &o = ops[i];
		const int32_t n = static_cast<int32_t>(i);
		switch (o.k) {
		case kind::put:
			if (known(o))
				put_version.add(o.ret, version(o), n);
			put_call.add(o.ret, o.call, n);
			first_put = std::min(first_put, o.call);
			if (!known(o))
				first_unknown_put = std::min(first_unknown_put, o.call);
			break;
		case kind::read_put:
			if (known(o))
				read_version.add(o.ret, version(o), n);
			read_put_call.add(o.ret, ops[p.puts[o.put].lop].call, n);
			break;
		case kind::del:
			gone_call.add(o.ret, o.call, n);
			del_ret.add(o.call, o.ret, n);
			break;
		case kind::read_absent:
			gone_call.add(o.ret, o.call, n);
			break;
		case kind::read_present:
		case kind::read_unknown:
			break;
		}
	}
	for (const token &t : p.del_tokens)
		del_ret.add(t.call, never, -1);
	for (const token &t : p.put_tokens) {
		first_put = std::min(first_put, t.call);
		first_unknown_put = std::min(first_unknown_put, t.call);
	}
	for (auto *m : {&put_version, &put_call, &read_version, &read_put_call, &gone_call, &del_ret})
		m->build();

	std::vector<finding> out;
	for (const lop &b : ops) {
		finding f;
		f.to = b.ret;
		int64_t v = 0;
		int32_t w = -1;
		auto found = [&](const lop &other, const std::string &why) {
			f.from = std::min(b.call, other.call);
			f.why.push_back(why);
		};
		switch (b.k) {
		case kind::read_put: {
			const lop &wl = ops[p.puts[b.put].lop];
			const bool done = wl.ret != never;	// the put returned
			if (known(b) && put_version.before(b.call, &v, &w) && v > version(b))
				found(ops[w], "stale read: the " + desc(b) + ", although the " + desc(ops[w]) +
						      ", a newer version, before the get began.");
			else if (done && put_call.before(b.call, &v, &w) && v > wl.ret)
				found(ops[w], "stale read: the " + desc(b) + ", although the " + desc(ops[w]) +
						      ", after value " + std::to_string(h.ops[wl.src].value) +
						      " was written and before the get began.");
			else if (known(b) && read_version.before(b.call, &v, &w) && v > version(b))
				found(ops[w], "read going back in time: the " + desc(ops[w]) + ", then the " +
						      desc(b) + ", an older version.");
			else if (done && read_put_call.before(b.call, &v, &w) && v > wl.ret)
				found(ops[w], "read going back in time: the " + desc(ops[w]) + ", then the " +
						      desc(b) + ", whose put ended before the other's began.");
			else if (done && gone_call.before(b.call, &v, &w) && v > wl.ret)
				found(wl, "a deleted value came back: the " + desc(wl) + "; then the " +
						  desc(ops[w]) + "; then the " + desc(b) + ".");
			break;
		}
		case kind::read_absent: {
			// the put acknowledged before it began, invoked last, and
			// the del invoked before it ended, returned last
			if (!put_call.before(b.call, &v, &w))
				break;
			const lop &q = ops[w];
			int64_t dret;
			int32_t dw;
			if (!del_ret.before(b.ret, &dret, &dw, true) || dret < q.call)
				found(q, "a value vanished: the " + desc(b) + ", although the " + desc(q) +
						 " before it began, and no del of the key could come between.");
			break;
		}
		case kind::put:
			if (known(b) && put_version.before(b.call, &v, &w) && v > version(b))
				found(ops[w], "versions going backwards: the " + desc(ops[w]) + " before the " +
						      desc(b) + " began.");
			break;
		case kind::read_present:
		case kind::del:
			if (first_put > b.ret)
				found(b, "a value out of nowhere: the " + desc(b) +
						 ", before any put of the key began.");
			break;
		case kind::read_unknown:
			if (first_unknown_put > b.ret)
				found(b, "a version out of nowhere: the " + desc(b) +
						 ", which no put of the key is known to have, before any put " +
						 "whose version is unknown began.");
			break;
		}
		if (!f.why.empty())
			out.push_back(std::move(f));
	}
	return out;
}

// ---------------------------------------------------------------- the search

constexpr int32_t absent = -1;	// the register's state: no value
constexpr int32_t anonymous = -2;	// a value nobody read (a put token)

class searcher {
public:
	searcher(const problem &p, const options &opt)
		: p_(p), ops_(p.search), n_(ops_.size()), bits_((n_ + 63) / 64), next_(n_ + 1),
		  prev_(n_ + 1), unread_(p.puts.size()), max_steps_(opt.max_steps),
		  max_bytes_(opt.max_memo_bytes)
	{
		first_read_.assign(p.puts.size(), never);
		for (const lop &o : ops_)
			if (o.k == kind::read_put) {
				unread_[o.put]++;
				first_read_[o.put] = std::min(first_read_[o.put], o.ret);
			}
		// the operations not linearized, in order, n_ heading the ring
		for (size_t i = 0; i <= n_; i++) {
			next_[i] = static_cast<uint32_t>(i == n_ ? 0 : i + 1);
			prev_[i] = static_cast<uint32_t>(i == 0 ? n_ : i - 1);
		}
	}

	verdict run();
	uint64_t steps() const { return steps_; }
	const std::vector<lop> &ops() const { return ops_; }

	// The deepest point the search reached: what was linearized, and the
	// state.
	std::vector<uint64_t> best;
	int32_t best_cur = absent;
	size_t best_cnt = 0;

private:
	struct frame {
		size_t trail;
		int32_t cur, nvp, tdel, tput;
		size_t hi;
		size_t mv_begin, mv_end, mv_next;
	};
	struct move {
		int32_t op;
		uint8_t token;	// 0 none, 1 an info del first, 2 an info put first
	};
	enum class step { done, more, budget };

	void apply(size_t i);
	void unapply(size_t i);
	frame save() const { return {trail_.size(), cur_, nvp_, tdel_, tput_, hi_, 0, 0, 0}; }
	bool covered();
	step expand(size_t fi);
	void snapshot();

	const problem &p_;
	const std::vector<lop> &ops_;
	size_t n_;
	std::vector<uint64_t> bits_;
	std::vector<uint32_t> next_, prev_;
	std::vector<int32_t> unread_;	// reads of each put still to come
	std::vector<int64_t> first_read_;	// the earliest return of a read of each
	std::vector<int32_t> trail_;	// ops linearized, in order
	std::vector<frame> frames_;
	std::vector<move> moves_;
	std::vector<int32_t> free_puts_;
	// the states tried: by the operations linearized and the value, the
	// tokens used (a Pareto front)
	std::unordered_map<std::string, std::vector<std::pair<int32_t, int32_t>>> seen_;
	size_t seen_bytes_ = 0;
	size_t cnt_ = 0, hi_ = 0;	// hi_: 1 + the greatest operation linearized
	int32_t cur_ = absent, nvp_ = 0, tdel_ = 0, tput_ = 0;
	uint64_t steps_ = 0, max_steps_, max_bytes_;
};

void searcher::apply(size_t i)
{
	const lop &o = ops_[i];
	bits_[i >> 6] |= uint64_t(1) << (i & 63);
	next_[prev_[i]] = next_[i];
	prev_[next_[i]] = prev_[i];
	cnt_++;
	trail_.push_back(static_cast<int32_t>(i));
	switch (o.k) {
	case kind::put:
		cur_ = o.put;
		if (p_.puts[o.put].rank >= 0)
			nvp_++;
		break;
	case kind::del:
		cur_ = absent;
		break;
	case kind::read_put:
		unread_[o.put]--;
		break;
	case kind::read_absent:
	case kind::read_present:
	case kind::read_unknown:
		break;
	}
	hi_ = std::max(hi_, i + 1);
}

// in the reverse order of apply() (dancing links)
void searcher::unapply(size_t i)
{
	const lop &o = ops_[i];
	bits_[i >> 6] &= ~(uint64_t(1) << (i & 63));
	next_[prev_[i]] = static_cast<uint32_t>(i);
	prev_[next_[i]] = static_cast<uint32_t>(i);
	cnt_--;
	if (o.k == kind::read_put)
		unread_[o.put]++;
}

void searcher::snapshot()
{
	if (!best.empty() && cnt_ <= best_cnt)
		return;
	best = bits_;
	best_cnt = cnt_;
	best_cur = cur_;
}

searcher::step searcher::expand(size_t fi)
{
	if (++steps_ > max_steps_ || seen_bytes_ > max_bytes_)
		return step::budget;
	// take every read that may come next and matches; note the rest
	int32_t put_next = -1, del = -1, want_absent = -1, want_present = -1, want_unknown = -1;
	free_puts_.clear();
	int64_t m = never;
	for (size_t i = next_[n_]; i != n_;) {
		const size_t nx = next_[i];
		const lop &o = ops_[i];
		if (o.call > m)
			break;
		bool take = false;
		switch (o.k) {
		case kind::read_put:
			take = cur_ == o.put;
			break;
		case kind::read_absent:
			take = cur_ == absent;
			if (!take && want_absent < 0)
				want_absent = static_cast<int32_t>(i);
			break;
		case kind::read_present:
			take = cur_ != absent;
			if (!take && want_present < 0)
				want_present = static_cast<int32_t>(i);
			break;
		case kind::read_unknown:
			take = cur_ == anonymous || (cur_ >= 0 && !p_.puts[cur_].known);
			if (!take && want_unknown < 0)
				want_unknown = static_cast<int32_t>(i);
			break;
		case kind::put:
			if (p_.puts[o.put].rank < 0)
				free_puts_.push_back(static_cast<int32_t>(i));
			else if (p_.puts[o.put].rank == nvp_)
				put_next = static_cast<int32_t>(i);
			break;
		case kind::del:
			if (del < 0 || o.ret < ops_[del].ret)
				del = static_cast<int32_t>(i);
			break;
		}
		if (take)
			apply(i);
		else
			m = std::min(m, o.ret);
		i = nx;
	}
	frame &f = frames_[fi];
	f.mv_begin = f.mv_end = f.mv_next = moves_.size();
	if (cnt_ == n_)
		return step::done;

	if (covered())
		return step::more;

	const bool may_overwrite = cur_ < 0 || unread_[cur_] == 0;
	const bool del_token = tdel_ < static_cast<int32_t>(p_.del_tokens.size()) &&
			       p_.del_tokens[tdel_].call <= m;
	const bool put_token = tput_ < static_cast<int32_t>(p_.put_tokens.size()) &&
			       p_.put_tokens[tput_].call <= m;
	if (may_overwrite) {
		if (put_next >= 0)
			moves_.push_back({put_next, 0});
		for (int32_t i : free_puts_)
			moves_.push_back({i, 0});
	}
	if (del >= 0) {
		if (cur_ != absent && may_overwrite)
			moves_.push_back({del, 0});
		else if (cur_ == absent && put_token)
			moves_.push_back({del, 2});
	}
	if (want_absent >= 0 && del_token && may_overwrite)
		moves_.push_back({want_absent, 1});
	if (want_present >= 0 && put_token)
		moves_.push_back({want_present, 2});
	if (want_unknown >= 0 && put_token && may_overwrite)
		moves_.push_back({want_unknown, 2});
	// the operation that must take effect first, first: by its return,
	// or a put by the return of its first read if earlier
	auto due = [&](const move &x) {
		const lop &o = ops_[x.op];
		return o.k == kind::put ? std::min(o.ret, first_read_[o.put]) : o.ret;
	};
	std::stable_sort(moves_.begin() + static_cast<std::ptrdiff_t>(f.mv_begin), moves_.end(),
			 [&](const move &a, const move &b) { return due(a) < due(b); });
	f.mv_end = moves_.size();
	return step::more;
}

// Whether a state tried before covers this one, remembering this one if
// not.  The operations linearized and the value must be the same (a value
// no read is still to read is as good as any other such one, but for
// whether its version is known); then a state that used no more tokens of
// either kind covers it: the tokens left are more, each one there as
// early.  (Covering by reads linearized too, a subset test, cost more
// than it saved.)
bool searcher::covered()
{
	const int32_t value = cur_ >= 0 && !unread_[cur_] ? (p_.puts[cur_].known ? -3 : anonymous) : cur_;
	std::string key(8, '\0');
	const uint32_t head[2] = {static_cast<uint32_t>(hi_), static_cast<uint32_t>(value)};
	std::copy_n(reinterpret_cast<const char *>(head), sizeof(head), key.begin());
	for (size_t i = next_[n_]; i != n_ && i < hi_; i = next_[i])
		key.append(reinterpret_cast<const char *>(&i), 4);
	auto [it, fresh] = seen_.try_emplace(std::move(key));
	auto &used = it->second;
	if (fresh) {
		seen_bytes_ += it->first.size() + 96;
	} else {
		for (auto [d, u] : used)
			if (d <= tdel_ && u <= tput_)
				return true;
		std::erase_if(used, [&](const std::pair<int32_t, int32_t> &x) {
			return x.first >= tdel_ && x.second >= tput_;
		});
	}
	used.emplace_back(tdel_, tput_);
	seen_bytes_ += 8;
	return false;
}

verdict searcher::run()
{
	// what an expansion decides: the search's end, or nothing yet
	auto ended = [this](step s) -> std::optional<verdict> {
		if (s == step::done)
			return verdict::linearizable;
		if (s == step::budget) {
			snapshot();
			return verdict::undecided;
		}
		return std::nullopt;
	};
	frames_.push_back(save());
	if (auto v = ended(expand(0)))
		return *v;
	while (!frames_.empty()) {
		size_t fi = frames_.size() - 1;
		if (frames_[fi].mv_next < frames_[fi].mv_end) {
			move mv = moves_[frames_[fi].mv_next++];
			frames_.push_back(save());
			if (mv.token == 1) {
				tdel_++;
				cur_ = absent;
			} else if (mv.token == 2) {
				tput_++;
				cur_ = anonymous;
			}
			apply(static_cast<size_t>(mv.op));
			if (auto v = ended(expand(fi + 1)))
				return *v;
			continue;
		}
		snapshot();
		const frame f = frames_[fi];
		while (trail_.size() > f.trail) {
			unapply(static_cast<size_t>(trail_.back()));
			trail_.pop_back();
		}
		cur_ = f.cur;
		nvp_ = f.nvp;
		tdel_ = f.tdel;
		tput_ = f.tput;
		hi_ = f.hi;
		moves_.resize(f.mv_begin);
		frames_.pop_back();
	}
	return verdict::violation;
}

// ---------------------------------------------------------------- explaining

// Where the search got stuck: the state, and the operations that could
// have come next but cannot.
finding explain(const history &h, const problem &p, const searcher &s)
{
	finding f;
	const auto &ops = s.ops();
	const int64_t t0 = h.t0;
	auto done = [&](size_t i) { return s.best[i >> 6] >> (i & 63) & 1; };
	int64_t minr = never;
	for (size_t i = 0; i < ops.size(); i++)
		if (!done(i))
			minr = std::min(minr, ops[i].ret);
	std::vector<size_t> window;
	for (size_t i = 0; i < ops.size(); i++) {
		if (done(i))
			continue;
		if (ops[i].call > minr)
			break;
		window.push_back(i);
	}
	if (window.empty()) {	// cannot be: something was left
		f.why.push_back("not linearizable.");
		return f;
	}
	// from the first invocation among them to the return that forces the
	// issue (the last invocation when none of them returned)
	f.from = ops[window[0]].call;
	f.to = minr != never ? minr : ops[window.back()].call;
	f.why.push_back("no order of the key's operations explains what they returned by " +
			secs(f.to, t0) + ".");
	std::string state;
	if (s.best_cur >= 0) {
		const kput &k = p.puts[s.best_cur];
		state = "value " + std::to_string(h.ops[k.src].value) + " of the " + describe(h.ops[k.src], t0);
		for (size_t i = 0; i < ops.size(); i++)
			if (!done(i) && ops[i].k == kind::read_put && ops[i].put == s.best_cur) {
				state += " (still to be read by the " + describe(h.ops[ops[i].src], t0) + ")";
				break;
			}
	} else if (s.best_cur == anonymous) {
		state = "a value of a put whose outcome is unknown";
	} else {
		state = "no value";
	}
	f.why.push_back("The operations before can be put in an order, which leaves the key with " + state +
			"; none of these can come next:");
	size_t shown = 0;
	for (size_t i : window) {
		if (shown++ == 8) {
			f.why.push_back("  ... and " + std::to_string(window.size() - 8) + " more");
			break;
		}
		f.why.push_back("  " + describe(h.ops[ops[i].src], t0));
	}
	return f;
}

// ---------------------------------------------------------------- lost puts

// The final reads of a key: those marked final (when any op of the
// history is), else its last read.
std::vector<uint32_t> final_reads(const history &h, const std::vector<uint32_t> &idx,
				  const problem &p, bool marked)
{
	std::vector<uint32_t> out;
	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (o.f != fn::get && o.f != fn::exist)
			continue;
		if (!p.read_of.count(i))	// failed, unknown, impossible, bad bytes
			continue;
		if (marked ? o.final : out.empty() || h.ops[out.back()].call <= o.call) {
			if (!marked)
				out.clear();
			out.push_back(i);
		}
	}
	return out;
}

void lost_puts(const history &h, const std::vector<uint32_t> &idx, const problem &p,
	       const options &opt, bool marked, report &r)
{
	std::set<uint32_t> lost;
	std::vector<std::string> words;
	for (uint32_t fi : final_reads(h, idx, p, marked)) {
		const op &f = h.ops[fi];
		const lop &l = p.ops[p.read_of.at(fi)];
		// found a value, but which one it cannot say
		if (l.k == kind::read_present || (l.k == kind::read_unknown && !opt.versions))
			continue;
		const kput *seen = l.k == kind::read_put ? &p.puts[l.put] : nullptr;
		const bool empty = l.k == kind::read_absent;
		// of the dels that may have deleted something before it ended,
		// the latest return
		int64_t del_ret = std::numeric_limits<int64_t>::min();
		if (empty)
			for (uint32_t di : idx) {
				const op &d = h.ops[di];
				if (d.f == fn::del && d.call <= f.ret &&
				    (d.type == outcome::info || (d.type == outcome::ok && d.found)))
					del_ret = std::max(del_ret, d.ret);
			}
		for (const kput &k : p.puts) {
			const op &w = h.ops[k.src];
			if (w.type != outcome::ok || w.ret >= f.call || &k == seen || lost.count(k.src))
				continue;
			bool gone;
			if (seen) {
				const op &s = h.ops[seen->src];
				gone = opt.versions && seen->known ? k.version > seen->version : s.ret < w.call;
			} else if (empty) {
				gone = del_ret < w.call;
			} else {	// an exist's version no put is known to have
				gone = k.version > f.version;
			}
			if (!gone)
				continue;
			lost.insert(k.src);
			words.push_back("key " + quoted(w.key) + ": the " + describe(w, h.t0) +
					", is lost: the final " + describe(f, h.t0) +
					(empty ? ", and no del of the key could have removed it." : ", an older version."));
		}
	}
	r.lost_acked += lost.size();
	r.lost.insert(r.lost.end(), words.begin(), words.end());

	// a final phase that read nothing of a key cannot tell
	if (!marked)
		return;
	std::string why;
	for (uint32_t i : idx) {
		const op &o = h.ops[i];
		if (!o.final || (o.f != fn::get && o.f != fn::exist))
			continue;
		if (o.type == outcome::ok)
			return;
		why += std::string(why.empty() ? "" : "; ") + "the " + describe(o, h.t0);
	}
	if (why.empty())
		return;
	r.unread_final++;
	r.unread.push_back("key " + quoted(h.ops[idx[0]].key) + ": no final read succeeded: " + why + ".");
}

// ---------------------------------------------------------------- wrong bytes

// Gets whose bytes are whole (their checksum holds) but not the bytes of
// what the get names: a value put to another key and never to this one,
// or, with versions, a version other than the one its put was given (the
// put acknowledged with another, or the version named acknowledged to
// another put).  The value a get reports is the one its bytes carry (the
// workload's pattern is a function of the value), so these are reads of
// the wrong object, said as such; the per-key check also finds most of
// them (a value never written to the key, a wrong version), but in the
// words of a register's history, not of the bytes.
void wrong_bytes(const history &h, const options &opt, report &r)
{
	std::unordered_map<uint64_t, std::vector<uint32_t>> puts_of_value;
	std::unordered_map<int64_t, uint32_t> acked_version;
	for (size_t i = 0; i < h.ops.size(); i++) {
		const op &o = h.ops[i];
		if (o.f != fn::put)
			continue;
		puts_of_value[o.value].push_back(static_cast<uint32_t>(i));
		if (o.type == outcome::ok && o.has_version)
			acked_version.emplace(o.version, static_cast<uint32_t>(i));
	}
	for (const op &o : h.ops) {
		if (o.f != fn::get || o.type != outcome::ok || !o.found || !o.checksum_ok)
			continue;
		auto it = puts_of_value.find(o.value);
		if (it == puts_of_value.end())
			continue;	// nobody wrote them: the per-key check says so
		const op *w = nullptr;
		for (uint32_t i : it->second)
			if (h.ops[i].key == o.key)
				w = &h.ops[i];
		if (!w) {
			const op &other = h.ops[it->second.front()];
			r.wrong_bytes++;
			r.wrong.push_back("key " + quoted(o.key) + ": the " + describe(o, h.t0) +
					  ", but those are the bytes the " + describe(other, h.t0) +
					  " wrote to key " + quoted(other.key) + ".");
			continue;
		}
		if (!opt.versions || !o.has_version)
			continue;
		if (w->type == outcome::ok && w->has_version) {
			if (w->version != o.version) {
				r.wrong_bytes++;
				r.wrong.push_back("key " + quoted(o.key) + ": the " + describe(o, h.t0) +
						  ", but those are the bytes of version " +
						  std::to_string(w->version) + ", the " + describe(*w, h.t0) + ".");
			}
			continue;
		}
		auto v = acked_version.find(o.version);
		if (v != acked_version.end()) {
			const op &owner = h.ops[v->second];
			r.wrong_bytes++;
			r.wrong.push_back("key " + quoted(o.key) + ": the " + describe(o, h.t0) +
					  ", but version " + std::to_string(o.version) + " is the " +
					  describe(owner, h.t0) + (owner.key == o.key ? "" : " of key " + quoted(owner.key)) +
					  ", and the bytes are those of the " + describe(*w, h.t0) + ".");
		}
	}
}

}  // namespace

// ---------------------------------------------------------------- check

report check(const history &h, const options &opt)
{
	const auto start = std::chrono::steady_clock::now();
	report r;
	r.t0 = h.t0;
	r.ops = h.ops.size();
	r.open_at_end = h.open_at_end;
	for (const op &o : h.ops) {
		(o.type == outcome::ok ? r.ok : o.type == outcome::fail ? r.fail : r.info)++;
		if (o.type != outcome::ok)
			r.errors[std::string(outcome_name(o.type)) + " " + (o.error.empty() ? "(none)" : o.error)]++;
	}
	r.faults = h.faults.size();
	for (const fault &f : h.faults)
		r.faults_by_name[f.name]++;

	std::map<std::string, std::vector<uint32_t>> keys;
	bool marked = false;
	for (size_t i = 0; i < h.ops.size(); i++) {
		keys[h.ops[i].key].push_back(static_cast<uint32_t>(i));
		marked |= h.ops[i].final;
	}
	r.keys = keys.size();

	if (opt.versions) {
		std::unordered_map<int64_t, uint32_t> by_version;
		for (size_t i = 0; i < h.ops.size(); i++) {
			const op &o = h.ops[i];
			if (o.f != fn::put || o.type != outcome::ok || !o.has_version)
				continue;
			auto [it, fresh] = by_version.emplace(o.version, static_cast<uint32_t>(i));
			const op &first = h.ops[it->second];
			if (!fresh && first.key != o.key) {
				r.dup_versions++;
				r.dups.push_back("version " + std::to_string(o.version) + " was given twice: to the " +
						 describe(first, h.t0) + " of key " + quoted(first.key) +
						 ", and to the " + describe(o, h.t0) + " of key " +
						 quoted(o.key) + ".");
			}
		}
	}

	wrong_bytes(h, opt, r);

	for (const auto &[key, idx] : keys) {
		const auto t = std::chrono::steady_clock::now();
		key_result kr;
		kr.key = key;
		kr.ops = idx.size();
		problem p = prepare(h, idx, opt);
		for (uint32_t b : p.bad) {
			r.bad_checksum++;
			r.bad.push_back("key " + quoted(key) + ": the " + describe(h.ops[b], h.t0) +
					", but its bytes fail their checksum.");
		}
		// proven without a search, or searched
		std::vector<finding> found = std::move(p.findings);
		if (opt.witnesses) {
			auto w = witnesses(h, p, opt);
			found.insert(found.end(), std::make_move_iterator(w.begin()),
				     std::make_move_iterator(w.end()));
		}
		kr.result = verdict::violation;
		if (found.empty()) {
			searcher s(p, opt);
			kr.result = s.run();
			kr.steps = s.steps();
			if (kr.result != verdict::linearizable) {
				finding f = explain(h, p, s);
				if (kr.result == verdict::undecided)
					f.why.insert(f.why.begin(), "undecided: the search gave up after " +
									    std::to_string(kr.steps) +
									    " steps; the deepest point it reached:");
				found.push_back(std::move(f));
			}
		}
		if (!found.empty()) {
			std::stable_sort(found.begin(), found.end(),
					 [](const finding &a, const finding &b) { return a.to < b.to; });
			kr.from = found[0].from;
			kr.to = found[0].to;
			kr.why = found[0].why;
			if (found.size() > 1)
				kr.why.push_back("Also, " + std::to_string(found.size() - 1) + " more:");
			for (size_t i = 1; i < found.size() && i <= 5; i++)
				kr.why.push_back("  " + found[i].why[0]);
		}
		if (kr.result == verdict::violation)
			r.violations++;
		else if (kr.result == verdict::undecided)
			r.undecided++;
		lost_puts(h, idx, p, opt, marked, r);
		kr.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
		r.keys_checked.push_back(std::move(kr));
	}
	r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	return r;
}

void print_report(std::ostream &out, const report &r, bool verbose)
{
	out << "history: " << r.ops << " operations (" << r.ok << " ok, " << r.fail << " failed, "
	    << r.info << " unknown";
	if (r.open_at_end)
		out << ", " << r.open_at_end << " of them never completed";
	out << ") on " << r.keys << (r.keys == 1 ? " key, " : " keys, ") << r.faults
	    << (r.faults == 1 ? " fault" : " faults");
	if (!r.faults_by_name.empty()) {
		const char *sep = " (";
		for (const auto &[name, n] : r.faults_by_name) {
			out << sep << name << ' ' << n;
			sep = ", ";
		}
		out << ')';
	}
	out << '\n';
	if (!r.errors.empty()) {
		out << "failed or unknown:";
		const char *sep = " ";
		for (const auto &[e, n] : r.errors) {
			out << sep << e << ' ' << n;
			sep = ", ";
		}
		out << '\n';
	}
	for (const key_result &k : r.keys_checked) {
		char ms[32];
		std::snprintf(ms, sizeof(ms), "%.1f ms", k.ms);
		if (k.result == verdict::linearizable) {
			if (verbose)
				out << "key " << quoted(k.key) << ": linearizable (" << k.ops << " operations, "
				    << k.steps << " steps, " << ms << ")\n";
			continue;
		}
		out << "key " << quoted(k.key) << ": "
		    << (k.result == verdict::undecided ? "UNDECIDED" : "NOT linearizable") << " ("
		    << k.ops << " operations, "
		    << (k.steps ? std::to_string(k.steps) + " steps, " : std::string("proven without search, "))
		    << ms << "), first violating window "
		    << secs(k.from, r.t0).substr(0, secs(k.from, r.t0).size() - 2) << " to "
		    << secs(k.to, r.t0) << ":\n";
		for (const std::string &w : k.why)
			out << "  " << w << '\n';
	}
	for (const std::string &s : r.lost)
		out << "lost acknowledged put: " << s << '\n';
	for (const std::string &s : r.bad)
		out << "bad checksum: " << s << '\n';
	for (const std::string &s : r.wrong)
		out << "wrong bytes: " << s << '\n';
	for (const std::string &s : r.dups)
		out << "version given twice: " << s << '\n';
	for (const std::string &s : r.unread)
		out << "unread: " << s << '\n';
}

void print_figures(std::ostream &out, const report &r, bool bench)
{
	const struct {
		const char *name;
		uint64_t value;
		const char *unit;
	} figs[] = {
		{"ops", r.ops, "ops"},
		{"ok", r.ok, "ops"},
		{"fail", r.fail, "ops"},
		{"info", r.info, "ops"},
		{"keys", r.keys, "keys"},
		{"faults", r.faults, "faults"},
		{"violations", r.violations, "keys"},
		{"undecided", r.undecided, "keys"},
		{"lost_acked", r.lost_acked, "puts"},
		{"bad_checksum", r.bad_checksum, "gets"},
		{"wrong_bytes", r.wrong_bytes, "gets"},
		{"dup_versions", r.dup_versions, "puts"},
		{"unread_final", r.unread_final, "keys"},
		{"check_ms", static_cast<uint64_t>(r.ms + 0.5), "ms"},
	};
	for (const auto &f : figs)
		if (bench)
			out << "bench: chaos." << f.name << ' ' << f.value << ' ' << f.unit << '\n';
		else
			out << "chaos." << f.name << ' ' << f.value << '\n';
}

}  // namespace dschaos
