"""The many-run audit: a threshold chosen on half of the runs, its errors counted on the
other half, and the four bounds from those counts (Nasr et al. 2021 and 2023)."""
