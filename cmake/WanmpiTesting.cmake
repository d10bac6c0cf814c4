# placeholder: owned by the tests helper
