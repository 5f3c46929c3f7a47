"""The one-run audit: the guesses and their rules, the k they take, and the (ε, δ) and μ-GDP
bounds from the count of right guesses (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis &
Chaudhuri 2024)."""
