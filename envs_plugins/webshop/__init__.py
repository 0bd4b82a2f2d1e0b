"""The WebShop pack: find, customise and buy the product an instruction asks for, in upstream
WebShop's simulated shop, with its data files, its pages and its reward."""
