// SPDX-License-Identifier: BSD-2-Clause
// Data processing: uploaded traces are kept only once the simulator's
// reader takes them; conversion, filtering, SHARDS sampling and the
// aggregates are the simulator library's, as dsctl sim uses it.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "analyze.hpp"
#include "ui.hpp"

namespace fs = std::filesystem;

namespace dsui {

namespace {

json file_json(const stmt &q)
{
	return { { "id", q.i64(0) }, { "name", q.text(1) }, { "user", q.text(2) },
		 { "created", q.f64(3) }, { "size", q.i64(4) }, { "format", q.text(5) },
		 { "requests", q.i64(6) }, { "objects", q.i64(7) },
		 { "csv", q.null(8) ? json(nullptr) : json(q.text(8)) },
		 { "origin", q.null(9) ? json(nullptr) : json(q.text(9)) } };
}

const char *const file_cols = "id, name, user, created, size, format, requests, objects, csv, origin";

dssim::trace load(db &d, const config &c, int64_t id)
{
	json f = file_get(d, id);
	dssim::read_opts ro;
	ro.format = f["format"];
	if (f["csv"].is_string())
		ro.csv = dssim::parse_csv_map(f["csv"].get<std::string>());
	try {
		return dssim::read_trace(file_path(d, c, id), ro);
	} catch (const dssim::sim_error &e) {
		raise(500, std::string("stored file ") + std::to_string(id) + " no longer reads: " + e.what());
	}
}

// Register path (already in files_dir under a temporary name) as a file
// read as t: the row, then the file under its id.
json keep(db &d, const config &c, const session &s, const std::string &tmp, const std::string &name,
	  const dssim::trace &t, const std::string &csv, const std::string &origin)
{
	std::error_code ec;
	uint64_t size = fs::file_size(tmp, ec);
	int64_t id;
	{
		std::lock_guard<std::recursive_mutex> g(d.lock_);
		stmt q = d.prepare("INSERT INTO files (name, user, created, size, format, requests, objects, csv, origin)"
				   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
		q.bind(name).bind(s.user).bind(now_s()).bind(int64_t(size)).bind(t.format)
			.bind(int64_t(t.size())).bind(int64_t(t.nobjects()));
		q.bind_or_null(csv).bind_or_null(origin);
		q.step();
		id = q.i64(0);
		q.run();
	}
	fs::rename(tmp, files_dir(c) + "/" + std::to_string(id), ec);
	if (ec) {
		d.prepare("DELETE FROM files WHERE id = ?").bind(id).run();
		fs::remove(tmp, ec);
		raise(500, "cannot keep the file: " + ec.message());
	}
	return file_get(d, id);
}

// A file name for display and downloads: its last part, printable.
std::string clean_name(const std::string &name)
{
	std::string base = name.substr(name.find_last_of("/\\") == std::string::npos
					       ? 0 : name.find_last_of("/\\") + 1);
	std::string out;
	for (unsigned char ch : base)
		out += ch < 0x20 || ch == 0x7f || ch == '"' ? '_' : char(ch);
	if (out.size() > 128)
		out.resize(128);
	// a name in bytes that are not UTF-8 would be a file nobody can list
	return out.empty() ? "trace" : valid_utf8(out);
}

std::string temp_in(const config &c)
{
	std::string p = files_dir(c) + "/.tmp-XXXXXX";
	int fd = mkstemp(p.data());
	if (fd < 0)
		raise(500, std::string("cannot create a file: ") + strerror(errno));
	close(fd);
	return p;
}

struct temp_guard {
	std::string path;
	~temp_guard()
	{
		std::error_code ec;
		fs::remove(path, ec);
	}
};

}  // namespace

std::string files_dir(const config &c)
{
	return c.db_path + ".files";	// made by serve()
}

json files_list(db &d)
{
	json out = json::array();
	stmt q = d.prepare(std::string("SELECT ") + file_cols + " FROM files ORDER BY id DESC");
	while (q.step())
		out.push_back(file_json(q));
	return out;
}

json file_get(db &d, int64_t id)
{
	stmt q = d.prepare(std::string("SELECT ") + file_cols + " FROM files WHERE id = ?");
	if (!q.bind(id).step())
		raise(404, "no file " + std::to_string(id));
	return file_json(q);
}

std::string file_path(db &d, const config &c, int64_t id)
{
	file_get(d, id);
	return files_dir(c) + "/" + std::to_string(id);
}

json file_add(db &d, const config &c, const session &s, const std::string &content,
	      const std::string &name, const std::string &format, const std::string &csv)
{
	std::string tmp = temp_in(c);
	temp_guard g{ tmp };
	{
		std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
		if (!out.write(content.data(), std::streamsize(content.size())) || !out.flush())
			raise(500, "cannot store the upload: " + std::string(strerror(errno)));
	}
	dssim::read_opts ro;
	dssim::trace t;

	const auto &formats = dssim::trace_formats();
	if (!format.empty() && std::find(formats.begin(), formats.end(), format) == formats.end()) {
		std::string all;
		for (const auto &f : formats)
			all += (all.empty() ? "" : ", ") + f;
		raise(400, "format is one of " + all + ", not \"" + format + "\"");
	}
	ro.format = format;
	try {
		if (!csv.empty())
			ro.csv = dssim::parse_csv_map(csv);
		t = dssim::read_trace(tmp, ro);
	} catch (const dssim::sim_error &e) {
		// the reader names the file by its temporary path: name it as sent
		std::string m = e.what();
		for (size_t at; (at = m.find(tmp)) != std::string::npos;)
			m.replace(at, tmp.size(), clean_name(name));
		raise(400, m);
	} catch (const std::bad_alloc &) {
		raise(413, "the trace does not fit in memory");
	}
	json f = keep(d, c, s, tmp, clean_name(name), t, t.format == "csv" ? csv : "", "upload");
	g.path.clear();
	audit(d, s, "uploaded file " + std::to_string(f["id"].get<int64_t>()) + " (" +
	      f["name"].get<std::string>() + ")");
	return f;
}

void file_del(db &d, const config &c, const session &s, int64_t id)
{
	json f = file_get(d, id);
	if (f["user"] != s.user && !s.admin())
		raise(403, "file " + std::to_string(id) + " is " + f["user"].get<std::string>() + "'s");
	std::string p = file_path(d, c, id);
	d.prepare("DELETE FROM files WHERE id = ?").bind(id).run();
	std::error_code ec;
	fs::remove(p, ec);
	audit(d, s, "deleted file " + std::to_string(id));
}

json file_derive(db &d, const config &c, const session &s, int64_t id, const std::string &what,
		 const json &args)
{
	json src = file_get(d, id);
	if (!args.is_object())
		raise(400, "the request body is a JSON object");
	dssim::trace t = load(d, c, id);
	dssim::trace out;
	std::string format = "oracleGeneral", suffix, csv;

	try {
		if (what == "convert") {
			if (!args.contains("to") || !args["to"].is_string())
				raise(400, "to is oracleGeneral, csv or text");
			format = args["to"];
			if (format != "oracleGeneral" && format != "csv" && format != "text")
				raise(400, "to is oracleGeneral, csv or text, not \"" + format + "\"");
			out = std::move(t);
			suffix = format == "oracleGeneral" ? ".oracleGeneral.bin" : format == "csv" ? ".csv" : ".txt";
		} else if (what == "sample") {
			double rate = args.contains("rate") && args["rate"].is_number() ? args["rate"].get<double>() : -1;
			if (!(rate > 0 && rate <= 1))
				raise(400, "rate is a number above 0 and at most 1");
			out = dssim::shards_sample(t, rate);
			if (out.ids.empty())
				raise(400, "a rate of " + json_text(args["rate"]) + " samples no request of this trace");
			suffix = ".shards.bin";
		} else if (what == "filter") {
			auto num = [&](const char *k, uint64_t def) {
				if (!args.contains(k) || args[k].is_null())
					return def;
				if (!args[k].is_number_unsigned())
					raise(400, std::string(k) + " is a request number (0 or more)");
				return args[k].get<uint64_t>();
			};
			uint64_t from = num("from", 0), to = num("to", t.size());
			int op = -1;
			if (args.contains("op") && !args["op"].is_null() && args["op"] != "all") {
				if (args["op"] == "read")
					op = 0;
				else if (args["op"] == "write")
					op = 1;
				else
					raise(400, "op is read, write or all");
			}
			if (from >= to)
				raise(400, "from must be below to");
			out = dssim::filter_trace(t, from, to, op);
			suffix = ".filtered.bin";
		} else {
			raise(404, "no such operation " + what);
		}
	} catch (const dssim::sim_error &e) {
		raise(400, e.what());
	}
	std::string tmp = temp_in(c);
	temp_guard g{ tmp };
	try {
		dssim::write_trace(out, tmp, format);
	} catch (const dssim::sim_error &e) {
		raise(500, e.what());
	}
	// what was written must read back as its format says
	dssim::read_opts ro;
	ro.format = format;
	if (format == "csv") {
		csv = "time=1,id=2,size=3,op=4,header";
		ro.csv = dssim::parse_csv_map(csv);
	}
	dssim::trace back = dssim::read_trace(tmp, ro);
	std::string base = src["name"];
	json f = keep(d, c, s, tmp, clean_name(base + suffix), back, csv,
		      what + " of file " + std::to_string(id));
	g.path.clear();
	audit(d, s, what + " of file " + std::to_string(id) + " made file " +
	      std::to_string(f["id"].get<int64_t>()), args);
	return f;
}

json file_analyze(db &d, const config &c, int64_t id)
{
	dssim::trace t = load(d, c, id);
	dssim::analysis a = dssim::analyze(t, analyze_top, 0);
	json top = json::array(), reuse = json::array(), wss = json::array();

	for (const auto &k : a.top)
		top.push_back({ { "key", k.key }, { "count", k.count }, { "bytes", k.bytes } });
	for (const auto &[le, n] : a.reuse)
		reuse.push_back({ { "le", le }, { "count", n } });
	for (const auto &w : a.wss)
		wss.push_back({ { "start", w.start }, { "objects", w.objects }, { "bytes", w.bytes } });
	return { { "id", id }, { "requests", a.requests }, { "objects", a.objects }, { "bytes", a.bytes },
		 { "top", top }, { "reuse", reuse }, { "cold", a.cold }, { "window", a.window },
		 { "wss", wss } };
}

}  // namespace dsui
