"""Storage workloads: fio job definitions, the standard workloads, Vdbench translation."""
