"""RQ, as the flows see it: the jobs a dispatch fans out to (fanout.py), the results RQ keeps of plan
jobs (plan_results.py), a project's RateLimit slot taken by a running job (slots.py), and the job this
process runs (running.py). The flows import neither `rq` nor `redis`: only this package does."""
