"""An example third-party GEM environment pack."""
