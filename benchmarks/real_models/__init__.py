"""Real trained models shipped in packages, with data rendered offline."""
