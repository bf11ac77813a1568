"""Jobs: a resumable writer's identity, its records beside the output, status and resume.

- :mod:`~chunkflow.jobs.identity`: what identifies a job (:func:`job_identity`): its
  function and arguments, plan, output metadata and sources;
- :mod:`~chunkflow.jobs.job`: the record keeper (:class:`Job`) of one job on one output
  array, and its :class:`JobSpec`;
- :mod:`~chunkflow.jobs.records`: where the mark and the records live in the store;
- :mod:`~chunkflow.jobs.status`: what an unfinished output tells (:func:`job_status`,
  the warning on open);
- :mod:`~chunkflow.jobs.overlap`: an output that is (or overlaps) a source, refused
  before anything is created;
- :mod:`~chunkflow.jobs.written`: the list of the chunks a finished job stored (for
  ``Array.verify``'s *lost* chunks);
- :mod:`~chunkflow.jobs.resume`: what writers share to resume (:func:`open_job`,
  progress, the chunk keys of a block).

"Job" means the record keeper only; a writer's planned graph is its ``*Plan``
(``MapPlan``, ``RechunkPlan``, ``PyramidPlan``). The package sits between ``sync``
and ``engine`` in the layering (it reads and writes its records through the store
alone): the engine removes a job's list of written chunks when it deletes one, and
the arrays of ``core`` say when their job is unfinished.
"""

from chunkflow.jobs.identity import function_parts, job_identity, metadata_part, source_parts
from chunkflow.jobs.job import Job, JobSpec, not_recorded, recording, records_in
from chunkflow.jobs.overlap import (
    array_location,
    canonical,
    check_not_source,
    location_of,
    overlaps,
)
from chunkflow.jobs.records import (
    JOB_ATTRIBUTE,
    RECORDS_FOLDER,
    recorded_block_plan,
    recorded_plan,
    records_prefix,
    without_mark,
)
from chunkflow.jobs.resume import block_keys, check_same_output, finish_after, job_progress, open_job
from chunkflow.jobs.status import (
    JobStatus,
    job_status,
    quiet_open,
    remaining_blocks,
    warn_if_incomplete,
)
from chunkflow.jobs.written import WRITTEN_KEY, drop_written, record_written, written_keys

__all__ = [
    "JOB_ATTRIBUTE",
    "RECORDS_FOLDER",
    "WRITTEN_KEY",
    "Job",
    "JobSpec",
    "JobStatus",
    "array_location",
    "block_keys",
    "canonical",
    "check_not_source",
    "check_same_output",
    "drop_written",
    "finish_after",
    "function_parts",
    "job_identity",
    "job_progress",
    "job_status",
    "location_of",
    "metadata_part",
    "not_recorded",
    "open_job",
    "overlaps",
    "quiet_open",
    "record_written",
    "recorded_block_plan",
    "recorded_plan",
    "recording",
    "records_in",
    "records_prefix",
    "remaining_blocks",
    "source_parts",
    "warn_if_incomplete",
    "without_mark",
    "written_keys",
]
