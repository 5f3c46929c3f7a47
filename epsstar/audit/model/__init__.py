"""Models: loader plugins and their contract, what a model file records (class labels, feature names, a declared DP guarantee), and how its outputs are read."""
