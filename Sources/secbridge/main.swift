print("secbridge")
