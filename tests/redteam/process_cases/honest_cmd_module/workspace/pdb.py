ANSWER = 'pdb of the workspace'
