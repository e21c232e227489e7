// SPDX-License-Identifier: BSD-2-Clause
// Synthetic workloads: zipf, uniform, scan and loop (and mixtures of
// them), and the RDMA connection sweep.  Everything is drawn from our own
// xoshiro256** and our own sampling, so a spec and its seed give the same
// trace on every platform and standard library.
//
// zipf and uniform draw from their objects; loop cycles over them in
// order (LRU's worst case once they outnumber the cache); scan reads
// objects 0, 1, 2, ... and never comes back to one, the one-pass scan
// that scan-resistant policies must not let flush the cache (its objects
// value does not matter: each pass is over new ones).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include <linux/dsmem_token.h>

#include "sim.hpp"

namespace dssim {

namespace {

constexpr uint64_t default_requests = 1000000;
constexpr uint64_t default_objects = 100000;
constexpr uint64_t max_requests = 1ULL << 32;
constexpr uint64_t max_objects = (1ULL << 32) - 2;	// dense ids are 32-bit
constexpr int component_shift = 40;			// disjoint key spaces
constexpr uint32_t max_qps = DSMEM_HANDLE_INDEX_MAX + 1;

// ---- randomness --------------------------------------------------------------

uint64_t splitmix64(uint64_t &state)
{
	return mix64_finish(state += splitmix_gamma);
}

uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

// xoshiro256** (Blackman and Vigna), seeded through splitmix64
class rng {
public:
	explicit rng(uint64_t seed)
	{
		for (uint64_t &w : s_)
			w = splitmix64(seed);
	}

	uint64_t next()
	{
		uint64_t result = rotl(s_[1] * 5, 7) * 9;
		uint64_t t = s_[1] << 17;
		s_[2] ^= s_[0];
		s_[3] ^= s_[1];
		s_[1] ^= s_[2];
		s_[0] ^= s_[3];
		s_[2] ^= t;
		s_[3] = rotl(s_[3], 45);
		return result;
	}

	// [0, 1) with 53 random bits
	double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

	// [0, n), unbiased (Lemire's multiply and reject)
	uint64_t below(uint64_t n)
	{
		__uint128_t m = static_cast<__uint128_t>(next()) * n;
		auto low = static_cast<uint64_t>(m);
		if (low < n) {
			uint64_t threshold = -n % n;
			while (low < threshold) {
				m = static_cast<__uint128_t>(next()) * n;
				low = static_cast<uint64_t>(m);
			}
		}
		return static_cast<uint64_t>(m >> 64);
	}

private:
	uint64_t s_[4];
};

// Walker's alias table (Vose's construction): column i with probability
// proportional to weights[i], from one random number and one entry.
class alias_table {
public:
	explicit alias_table(std::vector<double> weights)
	{
		const size_t n = weights.size();
		double sum = 0;
		for (double w : weights)
			sum += w;
		for (double &w : weights)
			w *= static_cast<double>(n) / sum;	// mean 1
		table_.resize(n);
		// the small ones from the front of work, the large from the back
		std::vector<uint32_t> work(n);
		size_t small = 0, large = n;
		for (size_t i = 0; i < n; i++)
			work[weights[i] < 1.0 ? small++ : --large] = static_cast<uint32_t>(i);
		size_t s = 0;
		while (s < small && large < n) {
			uint32_t lo = work[s++], hi = work[large];
			table_[lo] = { keep_of(weights[lo]), hi };
			weights[hi] -= 1.0 - weights[lo];
			if (weights[hi] < 1.0) {
				work[--s] = hi;	// hi turns small: it takes lo's slot
				large++;
			}
		}
		// what is left weighs 1 up to rounding: always kept
		for (; s < small; s++)
			table_[work[s]] = { always, work[s] };
		for (; large < n; large++)
			table_[work[large]] = { always, work[large] };
	}

	size_t operator()(rng &r) const
	{
		// the high half of r * n picks the column, the low half (as
		// uniform as r) decides between it and its alias
		__uint128_t m = static_cast<__uint128_t>(r.next()) * table_.size();
		auto column = static_cast<size_t>(m >> 64);
		auto coin = static_cast<uint32_t>(static_cast<uint64_t>(m) >> 32);
		const entry &e = table_[column];
		return coin < e.keep ? column : e.alias;
	}

private:
	static constexpr uint32_t always = std::numeric_limits<uint32_t>::max();

	struct entry {
		uint32_t keep;	// keep the column when coin < keep (of 2^32)
		uint32_t alias;
	};

	static uint32_t keep_of(double w)
	{
		double scaled = std::ldexp(std::max(w, 0.0), 32);
		return scaled >= 0x1p32 - 1 ? always : static_cast<uint32_t>(scaled);
	}

	std::vector<entry> table_;
};

// Zipf ranks 1..n with P(k) proportional to k^-alpha, exactly, for any
// alpha > 0 and n: an alias table picks a cell of ranks by its hat mass
// (width * first^-alpha), a uniform rank k in it is kept with probability
// (k / first)^-alpha, else all is drawn again.  Ranks below 128 have a
// cell each; past them a cell is 1/64 as wide as its first rank, so the
// table has about 128 + 64 ln(n / 128) cells (under 1,300 for 2^32) and
// stays in cache, and a rank is kept at least 98% of the time (alpha 1),
// nearly always without calling pow().
class zipf_sampler {
public:
	zipf_sampler(uint64_t n, double alpha) :
		alpha_(alpha), cells_(make_cells(n, alpha)), pick_(hat_masses())
	{
	}

	uint64_t operator()(rng &r) const
	{
		for (;;) {
			const cell &c = cells_[pick_(r)];
			if (c.width == 1)
				return c.first;
			uint64_t k = c.first + r.below(c.width);
			double u = r.unit();
			if (u < c.surely_kept ||
			    u < std::pow(static_cast<double>(k) / static_cast<double>(c.first),
					 -alpha_))
				return k;
		}
	}

private:
	static constexpr uint64_t width_ratio = 64;

	struct cell {
		uint64_t first, width;
		double surely_kept;	// (last / first)^-alpha: the least kept
		double hat;		// width * first^-alpha
	};

	static std::vector<cell> make_cells(uint64_t n, double alpha)
	{
		std::vector<cell> cells;
		for (uint64_t first = 1; first <= n;) {
			uint64_t width =
				std::min(std::max<uint64_t>(1, first / width_ratio), n - first + 1);
			double last = static_cast<double>(first + width - 1);
			cells.push_back({ first, width,
					  std::pow(last / static_cast<double>(first), -alpha),
					  static_cast<double>(width) *
						  std::pow(static_cast<double>(first), -alpha) });
			first += width;
		}
		return cells;
	}

	std::vector<double> hat_masses() const
	{
		std::vector<double> masses;
		for (const cell &c : cells_)
			masses.push_back(c.hat);
		return masses;
	}

	double alpha_;
	std::vector<cell> cells_;
	alias_table pick_;
};

// ---- spec parsing ---------------------------------------------------------------

std::string quoted(std::string_view s)
{
	return "\"" + std::string(s) + "\"";
}

[[noreturn]] void bad_spec(std::string_view part, const std::string &why)
{
	throw sim_error("workload " + quoted(part) + ": " + why);
}

// k, m, g: decimal multipliers
uint64_t suffix_multiplier(char c)
{
	switch (c) {
	case 'k': case 'K': return 1000;
	case 'm': case 'M': return 1000000;
	case 'g': case 'G': return 1000000000;
	default: return 0;
	}
}

// The digits of a number and the multiplier its k/m/g suffix stands for
// (1 without one).
std::string_view split_suffix(std::string_view value, uint64_t &mult)
{
	mult = value.empty() ? 0 : suffix_multiplier(value.back());
	if (!mult) {
		mult = 1;
		return value;
	}
	return value.substr(0, value.size() - 1);
}

// A number with an optional k/m/g suffix, or in 1e6 notation.
double parse_real(std::string_view part, std::string_view key, std::string_view value)
{
	uint64_t mult;
	std::string_view digits = split_suffix(value, mult);
	double v = 0;
	auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
	if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
	    !std::isfinite(v))
		bad_spec(part, std::string(key) + "=" + quoted(value) + " is not a number");
	return v * static_cast<double>(mult);
}

// A whole number in [lo, hi]: exact for plain integers (seeds), through
// parse_real for 1.5k or 1e6.
uint64_t parse_count(std::string_view part, std::string_view key, std::string_view value,
		     uint64_t lo, uint64_t hi)
{
	uint64_t v = 0, mult;
	std::string_view digits = split_suffix(value, mult);
	auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
	bool exact = ec == std::errc() && end == digits.data() + digits.size() && !digits.empty();
	bool in_range = true;
	if (exact) {
		in_range = v <= std::numeric_limits<uint64_t>::max() / mult;
		v *= mult;
	} else {
		double real = parse_real(part, key, value);
		if (std::fabs(real - std::round(real)) > 1e-9 * std::max(1.0, std::fabs(real)))
			bad_spec(part, std::string(key) + "=" + std::string(value) +
					       " is not a whole number");
		in_range = real >= 0 && real < 0x1p64;
		v = in_range ? static_cast<uint64_t>(std::round(real)) : 0;
	}
	if (!in_range || v < lo || v > hi)
		bad_spec(part, std::string(key) + "=" + std::string(value) + " is out of range (" +
				       std::to_string(lo) + ".." + std::to_string(hi) + ")");
	return v;
}

double parse_fraction(std::string_view part, std::string_view key, std::string_view value)
{
	double v = parse_real(part, key, value);
	if (v < 0 || v > 1)
		bad_spec(part,
			 std::string(key) + "=" + std::string(value) + " is not between 0 and 1");
	return v;
}

// Calls item(key, value) for each KEY=VALUE of "KIND:K=V,K=V"; returns KIND.
template <typename F>
std::string_view for_each_item(std::string_view part, F item)
{
	size_t colon = part.find(':');
	std::string_view kind = part.substr(0, colon);
	if (colon == std::string_view::npos)
		return kind;
	std::string_view rest = part.substr(colon + 1);
	for (;;) {
		size_t comma = std::min(rest.find(','), rest.size());
		std::string_view kv = rest.substr(0, comma);
		size_t eq = kv.find('=');
		if (kv.empty())
			bad_spec(part, "an empty KEY=VALUE");
		if (eq == std::string_view::npos || eq == 0 || eq + 1 == kv.size())
			bad_spec(part, quoted(kv) + " is not KEY=VALUE");
		item(kv.substr(0, eq), kv.substr(eq + 1));
		if (comma == rest.size())
			break;
		rest.remove_prefix(comma + 1);
	}
	return kind;
}

enum class workload_kind { zipf, uniform, scan, loop };

struct component {
	workload_kind kind = workload_kind::zipf;
	uint64_t objects = default_objects;
	double alpha = 1.0, weight = 1.0, write = 0;
	uint32_t size = 0;	// 0: not given
};

struct workload {
	std::vector<component> parts;
	uint64_t requests = default_requests;
	uint64_t seed = 1;
	bool requests_given = false, seed_given = false;
};

// requests and seed belong to the whole workload: any component may say
// them, but not two different values
void set_global(std::string_view part, std::string_view key, uint64_t value, uint64_t &field,
		bool &given)
{
	if (given && field != value)
		bad_spec(part, std::string(key) + " is given twice, differently");
	field = value;
	given = true;
}

bool parse_kind(std::string_view name, workload_kind &k)
{
	static const std::pair<const char *, workload_kind> kinds[] = {
		{ "zipf", workload_kind::zipf },
		{ "uniform", workload_kind::uniform },
		{ "scan", workload_kind::scan },
		{ "loop", workload_kind::loop },
	};
	for (auto &[n, value] : kinds)
		if (name == n) {
			k = value;
			return true;
		}
	return false;
}

// One KEY=VALUE of a zipf, uniform, scan or loop component.
void set_component_key(std::string_view part, std::string_view key, std::string_view value,
		       component &c, workload &w)
{
	const auto u64_max = std::numeric_limits<uint64_t>::max();
	if (key == "requests") {
		set_global(part, key, parse_count(part, key, value, 1, max_requests), w.requests,
			   w.requests_given);
	} else if (key == "seed") {
		set_global(part, key, parse_count(part, key, value, 0, u64_max), w.seed,
			   w.seed_given);
	} else if (key == "objects") {
		c.objects = parse_count(part, key, value, 1, max_objects);
	} else if (key == "alpha" || key == "weight") {
		if (key == "alpha" && c.kind != workload_kind::zipf)
			bad_spec(part, "alpha is for zipf only");
		double v = parse_real(part, key, value);
		if (!(v > 0))
			bad_spec(part, std::string(key) + "=" + std::string(value) +
					       " must be more than 0");
		(key == "alpha" ? c.alpha : c.weight) = v;
	} else if (key == "write") {
		c.write = parse_fraction(part, key, value);
	} else if (key == "size") {
		c.size = static_cast<uint32_t>(
			parse_count(part, key, value, 1, std::numeric_limits<uint32_t>::max()));
	} else {
		bad_spec(part, "unknown key " + quoted(key) +
				       " (requests, seed, objects, alpha, weight, write, size)");
	}
}

void parse_component(std::string_view part, workload &w)
{
	component c;
	std::string_view name = part.substr(0, part.find(':'));
	if (!parse_kind(name, c.kind))
		bad_spec(part,
			 "unknown kind " + quoted(name) + " (zipf, uniform, scan, loop, sweep)");
	for_each_item(part, [&](std::string_view key, std::string_view value) {
		set_component_key(part, key, value, c, w);
	});
	w.parts.push_back(c);
}

// SPEC split at the "+" that start a component (not the one in "1e+6")
std::vector<std::string_view> split_components(std::string_view spec)
{
	std::vector<std::string_view> parts;
	size_t start = 0;
	for (size_t i = 0; i <= spec.size(); i++) {
		bool at_plus = i < spec.size() && spec[i] == '+' && i + 1 < spec.size() &&
			       ((spec[i + 1] >= 'a' && spec[i + 1] <= 'z') ||
				(spec[i + 1] >= 'A' && spec[i + 1] <= 'Z'));
		if (i == spec.size() || at_plus) {
			parts.push_back(spec.substr(start, i - start));
			start = i + 1;
		}
	}
	return parts;
}

// ---- generation ---------------------------------------------------------------------

// A component's draws, its dense ids (order of first appearance) and its
// own key space.
class source {
public:
	source(const component &c, size_t index, uint64_t requests)
		: c_(c), zipf_(is_zipf() ? c.objects : 1, is_zipf() ? c.alpha : 1.0),
		  scatter_(c.objects), key_base_(static_cast<uint64_t>(index) << component_shift)
	{
		// a table per object when it is not much larger than the trace
		if (c.kind != workload_kind::scan && c.objects <= 2 * requests + (1u << 20))
			table_.assign(c.objects, none);
	}

	// the next request's object within this component (zipf: its rank
	// from 0, so that the popular ones share cache lines in table_)
	uint64_t draw(rng &r)
	{
		switch (c_.kind) {
		case workload_kind::zipf: return zipf_(r) - 1;
		case workload_kind::uniform: return r.below(c_.objects);
		case workload_kind::loop: return position_++ % c_.objects;
		default: return position_++;	// scan: never the same object twice
		}
	}

	uint32_t dense(uint64_t object, std::vector<uint64_t> &keys)
	{
		if (c_.kind == workload_kind::scan)
			return add(object, keys);
		if (!table_.empty()) {
			uint32_t &id = table_[object];
			if (id == none)
				id = add(object, keys);
			return id;
		}
		auto [it, added] = map_.try_emplace(object, 0);
		if (added)
			it->second = add(object, keys);
		return it->second;
	}

	void prefetch(uint64_t object) const
	{
		if (!table_.empty())
			__builtin_prefetch(&table_[object]);
	}

	const component &spec() const { return c_; }

private:
	static constexpr uint32_t none = std::numeric_limits<uint32_t>::max();

	bool is_zipf() const { return c_.kind == workload_kind::zipf; }

	uint32_t add(uint64_t object, std::vector<uint64_t> &keys)
	{
		if (keys.size() >= max_objects)
			throw sim_error("workload: more than 4G distinct objects");
		// zipf ranks are scattered over the keys: the popular objects
		// are not neighbours
		keys.push_back(key_base_ | (is_zipf() ? scatter_(object) : object));
		return static_cast<uint32_t>(keys.size() - 1);
	}

	component c_;
	zipf_sampler zipf_;
	scatter scatter_;
	uint64_t key_base_;
	uint64_t position_ = 0;
	std::vector<uint32_t> table_;
	std::unordered_map<uint64_t, uint32_t> map_;
};

// which component serves the next request, by weight
size_t pick(const std::vector<double> &cumulative, rng &r)
{
	if (cumulative.size() == 1)
		return 0;
	double u = r.unit() * cumulative.back();
	size_t i = 0;
	while (i + 1 < cumulative.size() && u >= cumulative[i])
		i++;
	return i;
}

trace generate_workload(const workload &w)
{
	std::vector<source> sources;
	std::vector<double> cumulative;
	bool writes = false, sizes = false;
	// weights are relative: ones so large that their sum overflows
	// (weight=1e308 twice) are taken over the largest, else the last
	// component would take every request
	double total = 0, largest = 0;
	for (const component &c : w.parts) {
		total += c.weight;
		largest = std::max(largest, c.weight);
	}
	const double scale = std::isfinite(total) ? 1.0 : largest;
	for (size_t i = 0; i < w.parts.size(); i++) {
		sources.emplace_back(w.parts[i], i, w.requests);
		cumulative.push_back((cumulative.empty() ? 0 : cumulative.back()) +
				     w.parts[i].weight / scale);
		writes |= w.parts[i].write > 0;
		sizes |= w.parts[i].size > 0;
	}

	trace t;
	t.ids.resize(w.requests);
	if (writes)
		t.writes.resize(w.requests);
	if (sizes)
		t.sizes.resize(w.requests);
	rng r(w.seed);
	// Drawn a batch ahead, so that the dense-id lookups (a cache miss
	// each once the table outgrows the cache) overlap.
	constexpr size_t batch = 256;
	struct drawn {
		source *src;
		uint64_t object;
	} ahead[batch];
	for (size_t start = 0; start < w.requests; start += batch) {
		const size_t n = std::min<size_t>(batch, w.requests - start);
		for (size_t j = 0; j < n; j++) {
			source &src = sources[pick(cumulative, r)];
			ahead[j] = { &src, src.draw(r) };
			src.prefetch(ahead[j].object);
		}
		for (size_t j = 0; j < n; j++) {
			const size_t i = start + j;
			t.ids[i] = ahead[j].src->dense(ahead[j].object, t.keys);
			const component &c = ahead[j].src->spec();
			if (c.write > 0)
				t.writes[i] = r.unit() < c.write;
			if (sizes)
				t.sizes[i] = c.size ? c.size : 1;  // 1: as when sizes are absent
		}
	}
	return t;
}

// ---- the connection sweep ----------------------------------------------------------

// "16..4096" doubles from 16 (and ends at 4096 even off the doubling),
// "16..4096/4" takes 4 geometric steps per doubling (a knee between two
// doublings is then found to within 19%), "100|450|3000" lists, "512" is
// one count
std::vector<uint32_t> parse_qps(std::string_view part, std::string_view value)
{
	auto count = [&](std::string_view v) {
		return static_cast<uint32_t>(parse_count(part, "qps", v, 1, max_qps));
	};
	std::vector<uint32_t> qps;
	size_t dots = value.find("..");
	if (dots != std::string_view::npos) {
		std::string_view range = value.substr(dots + 2);
		uint64_t steps = 1;
		size_t slash = range.find('/');
		if (slash != std::string_view::npos) {
			steps = parse_count(part, "qps steps", range.substr(slash + 1), 1, 64);
			range = range.substr(0, slash);
		}
		uint32_t lo = count(value.substr(0, dots)), hi = count(range);
		if (lo > hi)
			bad_spec(part, "qps=" + std::string(value) + " runs backwards");
		for (uint64_t j = 0;; j++) {
			double q = std::round(double(lo) * std::exp2(double(j) / double(steps)));
			if (q > double(hi))
				break;
			if (qps.empty() || qps.back() != static_cast<uint32_t>(q))
				qps.push_back(static_cast<uint32_t>(q));
		}
		if (qps.back() != hi)
			qps.push_back(hi);
		return qps;
	}
	for (;;) {
		size_t bar = std::min(value.find('|'), value.size());
		qps.push_back(count(value.substr(0, bar)));
		if (bar == value.size())
			break;
		value.remove_prefix(bar + 1);
	}
	// rising, each once: the knee is looked for from the lowest count up
	std::sort(qps.begin(), qps.end());
	qps.erase(std::unique(qps.begin(), qps.end()), qps.end());
	return qps;
}

void parse_sweep_item(std::string_view part, std::string_view key, std::string_view value,
		      sweep_spec &s)
{
	if (key == "qps")
		s.qps = parse_qps(part, value);
	else if (key == "ops")
		s.ops = parse_count(part, key, value, 1, max_requests / 3);
	else if (key == "reuse")
		s.reuse = parse_fraction(part, key, value);
	else if (key == "payload")
		s.payload = static_cast<uint32_t>(
			parse_count(part, key, value, 1, std::numeric_limits<uint32_t>::max()));
	else if (key == "qp_per_cq")
		s.qp_per_cq = static_cast<uint32_t>(parse_count(part, key, value, 1, max_qps));
	else if (key == "qp_per_mr")
		s.qp_per_mr = static_cast<uint32_t>(parse_count(part, key, value, 1, max_qps));
	else if (key == "seed")
		s.seed = parse_count(part, key, value, 0, std::numeric_limits<uint64_t>::max());
	else
		bad_spec(part, "unknown key " + quoted(key) +
				       " (qps, ops, reuse, payload, qp_per_cq, qp_per_mr, seed)");
}

std::string sweep_name(const sweep_spec &s, uint32_t qps)
{
	char reuse[32];
	std::snprintf(reuse, sizeof(reuse), "%g", s.reuse);
	return "sweep:qps=" + std::to_string(qps) + ",ops=" + std::to_string(s.ops) +
	       ",reuse=" + reuse + ",payload=" + std::to_string(s.payload) +
	       ",qp_per_cq=" + std::to_string(s.qp_per_cq) +
	       ",qp_per_mr=" + std::to_string(s.qp_per_mr) + ",seed=" + std::to_string(s.seed);
}

// the sweep's objects: dense ids by first appearance, keys as the dsmem
// reader makes them (the handle without its generation)
struct token_ids {
	std::vector<uint32_t> of_index[DSMEM_TOKEN_TYPES];

	uint32_t operator()(uint32_t type, uint32_t index, trace &t)
	{
		std::vector<uint32_t> &ids = of_index[type];
		if (ids.size() <= index)
			ids.resize(max_qps, std::numeric_limits<uint32_t>::max());
		uint32_t &id = ids[index];
		if (id == std::numeric_limits<uint32_t>::max()) {
			id = t.nobjects();
			t.keys.push_back(DSMEM_HANDLE(type, 0, index));
			t.eids.push_back(type << 16 | index);
			t.types.push_back(static_cast<uint8_t>(type));
		}
		return id;
	}
};

uint32_t token_size(uint32_t type)
{
	switch (type) {
	case DSMEM_TOKEN_QP: return DSMEM_QP_TOKEN_SIZE;
	case DSMEM_TOKEN_CQ: return DSMEM_CQ_TOKEN_SIZE;
	case DSMEM_TOKEN_MR: return DSMEM_MR_TOKEN_SIZE;
	case DSMEM_TOKEN_DB: return DSMEM_DB_TOKEN_SIZE;
	case DSMEM_TOKEN_WQE: return DSMEM_WQE_TOKEN_SIZE;
	default: return DSMEM_PD_TOKEN_SIZE;
	}
}

bool is_sweep(std::string_view part)
{
	return part.substr(0, part.find(':')) == "sweep";
}

// "sweep:..." as a trace: one QP count, not a list (the runner's)
trace generate_one_sweep(std::string_view spec)
{
	sweep_spec s;
	parse_sweep(spec, s);
	if (s.qps.size() > 1)
		bad_spec(spec, "qps gives " + std::to_string(s.qps.size()) + " counts: " +
				       "a trace takes one (qps=N), the sweep run takes the list");
	trace t = generate_sweep(s, s.qps[0]);
	t.name = spec;
	return t;
}

}  // namespace

// ---- the interface --------------------------------------------------------------------

bool parse_sweep(std::string_view s, sweep_spec &out)
{
	if (!is_sweep(s))
		return false;
	sweep_spec spec;
	for_each_item(s, [&](std::string_view key, std::string_view value) {
		parse_sweep_item(s, key, value, spec);
	});
	if (spec.qps.empty())
		bad_spec(s, "qps is required (qps=N, qps=A..B or qps=A|B|C)");
	out = spec;
	return true;
}

trace generate_sweep(const sweep_spec &s, uint32_t qps)
{
	if (qps < 1 || qps > max_qps)
		throw sim_error("sweep: " + std::to_string(qps) + " QPs is out of range (1.." +
				std::to_string(max_qps) + ")");
	if (s.qp_per_cq < 1 || s.qp_per_mr < 1)
		throw sim_error("sweep: qp_per_cq and qp_per_mr must be at least 1");
	if (s.ops < 1 || s.ops > max_requests / 3)
		throw sim_error("sweep: ops=" + std::to_string(s.ops) + " is out of range (1.." +
				std::to_string(max_requests / 3) + ")");
	if (!(s.reuse >= 0 && s.reuse <= 1))
		throw sim_error("sweep: reuse must be between 0 and 1");
	trace t;
	t.name = sweep_name(s, qps);
	t.format = "gen";
	const size_t n = 3 * s.ops;
	t.ids.reserve(n);
	t.sizes.reserve(n);
	t.writes.reserve(n);
	token_ids ids;
	rng r(s.seed);
	uint32_t qp = 0;
	for (uint64_t op = 0; op < s.ops; op++) {
		if (op == 0 || s.reuse == 0 || r.unit() >= s.reuse)
			qp = static_cast<uint32_t>(r.below(qps));
		// the QP's relaxed state is updated inline; the CQ and MR are read
		const std::pair<uint32_t, uint32_t> tokens[] = {
			{ DSMEM_TOKEN_QP, qp },
			{ DSMEM_TOKEN_CQ, qp / s.qp_per_cq },
			{ DSMEM_TOKEN_MR, qp / s.qp_per_mr }
		};
		for (auto [type, index] : tokens) {
			t.ids.push_back(ids(type, index, t));
			t.sizes.push_back(token_size(type));
			t.writes.push_back(type == DSMEM_TOKEN_QP);
		}
	}
	return t;
}

uint64_t generate_requests(std::string_view spec)
{
	std::vector<std::string_view> parts = split_components(spec);
	if (std::any_of(parts.begin(), parts.end(), is_sweep)) {
		sweep_spec sw;
		if (parts.size() > 1)
			bad_spec(spec, "a sweep cannot be mixed with other workloads");
		parse_sweep(spec, sw);
		return 3 * sw.ops * sw.qps.size();
	}
	workload w;
	for (std::string_view part : parts)
		parse_component(part, w);
	return w.requests;
}

trace generate(std::string_view spec)
{
	std::vector<std::string_view> parts = split_components(spec);
	if (std::any_of(parts.begin(), parts.end(), is_sweep)) {
		if (parts.size() > 1)
			bad_spec(spec, "a sweep cannot be mixed with other workloads");
		return generate_one_sweep(spec);
	}
	workload w;
	for (std::string_view part : parts)
		parse_component(part, w);
	trace t = generate_workload(w);
	t.name = spec;
	t.format = "gen";
	return t;
}

}  // namespace dssim
