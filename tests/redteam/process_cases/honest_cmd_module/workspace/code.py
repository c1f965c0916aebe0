ANSWER = 'code of the workspace'
