"""ZIP exports of an account: the jobs as the API sees them (jobs), and a worker's run of one (runs)."""
