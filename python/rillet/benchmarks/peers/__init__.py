"""rillet and its peers on one workload set (``rillet bench --peers``).

Each ``bench_<framework>.py`` here is a script run by the harness with the Python of that
framework's own virtual environment (their dependencies conflict), next to ``_common.py``
(the workloads' script, timing and output, standard library only) and ``_server.py`` (the
loopback OpenAI-compatible server of the HTTP workload). They are files run, not modules
imported by rillet.
"""
