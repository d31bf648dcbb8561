"""The fio driver: the process a ``fio`` probe job runs, in the job's directory.

``python -m assay.drivers.fio --spec '<json>'``

A plan is static, but a response curve needs the result of its uncontrolled run before the
rate-controlled ones can be written, so the job runs this driver instead of fio itself. It
writes each fio job file and fio's raw ``json+`` output into the current directory (kept with the
run), runs fio once per workload and curve point, reads each output with
``assay.parsers.fio.parse`` and prints the samples as JSON Lines on stdout -- nothing else goes
to stdout; progress and diagnostics go to stderr, prefixed ``fio-driver:``.

Exit codes: 0 ok; 1 fio failed (fio's stderr tail is printed), or ran out of time; 2 bad spec
or a safety refusal (nothing was written).

Modes
-----
``workloads``: each listed workload, then each custom job, as its own fio run, then each group
of jobs run together (below), as one fio run; the fill first when a run needs it
(``assay.fio.workloads.needs_fill``).

``curve``: Vdbench's ``iorate=curve`` for each workload / custom job / group: an uncontrolled run
(``iorate=max``), then runs capped at ``curve`` percent of the IOPS it achieved (Vdbench's
default ``curve=(10,50,70,80,90,100)``). The cap is fio's ``rate_iops``, which applies to every
thread, so the total is divided by ``numjobs`` (and split read/write for a mix), with Poisson
arrivals (``rate_process=poisson``: exponential inter-arrival times, Vdbench's default
``distribution=exponential``). The concurrency stays that of the max run: like Vdbench's
``threads=``, ``iodepth × numjobs`` bounds the I/Os outstanding at any rate. With
``max_latency_ms`` the curve stops after the first point whose mean latency passes it. After the
curve a ``curve-summary`` sample names the curve. The knee is a derived figure, found from the
stored points by ``assay.analysis.derived.storage_points.curve_knee``, and the curve is drawn by the
report (``assay report --format html`` or ``--plots-dir``): the driver only measures.

Every point's samples carry the point's totals over directions (``point_iops``,
``point_latency_s`` = mean total latency over every I/O, ``point_p99_s`` from the merged json+
bins) and what Little's law is judged against (``outstanding_expected`` = iodepth × numjobs,
iodepth 1 for synchronous engines; ``rate_limited``; ``ioengine``); the check itself (IOPS × mean
total latency against that) is derived from the stored figures by ``assay.analysis``.

Jobs run together (``groups``)
------------------------------
A group is a set of custom jobs that run *at once*, as Vdbench drives every SD of a run at once:
one fio invocation, one job file with a section per job, no ``stonewall`` (fio HOWTO: jobs in a
file start together unless ``stonewall`` says to wait) and ``new_group`` on each, so that
``group_reporting`` merges each job's own ``numjobs`` clones but not the jobs with each other
(fio HOWTO, ``new_group``: "Start a new reporting group"). Each group is one item: filled first
where its jobs need it (one fill run for all of them), then measured; its samples are each
job's own (``workload`` = the job's name, ``group`` = the group's) and the group's total
(``workload`` = ``job`` = the group's name, ``group_jobs``; IOPS and bandwidth summed, latency
merged from the json+ bins, ``numjobs`` the threads of all jobs, ``iodepth`` the largest;
``rw``/``bs`` the common value, else every pattern joined by ``+`` / ``mixed``). A group's jobs
without ``filename`` share assay's files (thread n of each uses ``assay-fio-<n>``), as Vdbench
workloads on one SD share it; give each job a ``filename`` for separate files.

A curve on a group runs the group uncontrolled, then caps the group's *total* at each
percentage of its total IOPS, dividing the cap between the jobs in the proportions of the
uncontrolled run (each job at ``p`` percent of what it did there). Vdbench divides a run's
``iorate`` between its workloads by ``skew=`` (evenly when none is given; guide 1.14); for jobs
of equal speed the two agree, and for unequal ones this keeps 100% the load the uncontrolled
run actually did, where an even split would ask a slow job for more than it can do.

Several hosts (``hosts``)
-------------------------
With ``hosts`` (fio connect strings ``ADDR[,PORT]``) every fio run -- fills included -- runs on
every host at once through fio's client/server mode (``assay.drivers.fio.clients``): the driver
starts ``fio --server`` on each host before the first run and stops them afterwards, also on
failure and SIGTERM. Each host runs the same jobs on its own files (``assay-fio-<host>-<n>``).
Samples: each host's figures (``host`` = its address) and the total over hosts (``host`` =
``All clients``, computed here from the per-host json+ entries: IOPS and bandwidth summed,
percentiles from the merged bins); every sample carries ``hosts`` (their number). A curve
caps the total: each host gets an equal part of each job's cap. The target must be a directory
every host sees at the same path (a shared file system, or this machine for loopback hosts);
the free-space check, the O_DIRECT check and the removal of the files see this machine's view.

Modules: ``spec`` (what one invocation does, and the items it runs), ``checks`` (the target
checks, made before the run by ``assay run`` and again here), ``runner`` (running fio, fills,
one measured point), ``modes`` (workloads and curve), ``cells`` (which figures a point
reports), ``figures`` (totals of a fio json+ document), ``curve`` (the curve's rates, the
concurrency each point is judged against), ``files`` (the files a job uses and
fills), ``clients`` (fio servers on several hosts, and merging their entries), ``__main__``
(the program).
"""
