// SPDX-License-Identifier: BSD-2-Clause
// The cache simulator for Python: "dsctl -j sim run" as a call, the same
// keywords in and the same record out (dsctl::sim_execute, which dsctl
// and the console run through), so that a sweep over many traces can be
// spread over a cluster by an engine of the caller's (dsmem.sim, Dask).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "dsctl.hpp"
#include "exec.hpp"

namespace py = pybind11;

namespace {

// The record "dsctl -j sim run WORDS..." prints, as JSON text.  Bad words
// and what the simulator refuses raise ValueError with dsctl's message.
std::string sim_run(const std::vector<std::string> &words)
{
	dsctl::args a(words);
	dsctl::keywords kw;
	std::string err;

	if (!kw.parse(a, dsctl::sim_run_words, err))
		throw py::value_error(err);
	// a simulation takes seconds to hours: other Python threads go on
	py::gil_scoped_release nogil;
	try {
		return dsctl::sim_execute(kw, nullptr).dump();
	} catch (const dssim::sim_error &e) {
		throw py::value_error(e.what());
	} catch (const dsctl::failure &f) {
		throw py::value_error(f.what);
	}
}

std::vector<std::string> sim_words()
{
	return { dsctl::sim_run_words.begin(), dsctl::sim_run_words.end() };
}

}  // namespace

void bind_sim(py::module_ &m)
{
	m.def("sim_run", &sim_run, py::arg("words"));
	m.def("sim_words", &sim_words);
}
