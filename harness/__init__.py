"""The test harness: the servers, faults and generated data (media files, pages, libraries) that
both the tests and the benchmarks use. It imports neither `tests` nor `bench`."""
