ANSWER = 'cmd of the workspace'
