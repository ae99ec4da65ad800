"""The extra passes beside the verdict: compute-sanitizer, Nsight Compute, the vendor library's times."""
